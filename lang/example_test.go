package lang_test

import (
	"fmt"
	"io/fs"

	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
)

// Load seed 003's I/P NIC and print which packets reach its software Tx
// output.
func Example() {
	ld := lang.Loader{ReadFile: func(name string) ([]byte, error) { return fs.ReadFile(models.FS, name) }, Library: models.FS}
	m, err := ld.Load("dragonet/nic.nsc")
	if err != nil {
		fmt.Println(err)
		return
	}
	g, _ := m.Graph("IPNicTx")
	fmt.Println(g.Predicates().Reaching(g.Node("TxSwOut")).Format("TxSwOut"))
	// Output:
	// TxSwOut:
	// OR
	//   AND
	//     net.prot != 2
	//     pred(TxQueue,out)
	//   AND
	//     net.prot == 2
	//     pred(TxPsetCtx,out)
	//     pred(TxQueue,out)
}
