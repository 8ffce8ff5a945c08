module github.com/dragonet-go/nsc

go 1.26

require (
	github.com/alecthomas/participle/v2 v2.1.4
	github.com/cilium/ebpf v0.22.0
	github.com/emicklei/dot v1.6.2
	github.com/google/go-cmp v0.7.0
	github.com/gopacket/gopacket v1.7.7
	golang.org/x/net v0.55.0
	gonum.org/v1/gonum v0.17.0
)

require golang.org/x/sys v0.45.0
