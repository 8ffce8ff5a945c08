// Package models holds the shipped model files, compiled into the binary.
//
//	lib/       the header library (ethernet, vlan, arp, ipv4, ipv6, icmp,
//	           icmpv6, udp, EJFAT LB v1/v2/v3 and RE, RoCEv2) and the parse graph
//	dragonet/  seed 003's I/P stack (LPG) and its imaginary NIC (PRGs)
//	inet/      a UDP/IPv4 stack (LPG) and the Intel 82599 NIC (PRG)
//	ejfat/     the EJFAT load balancer: lb-2021 (seed 000's v1), lb-2025 and
//	           lb-2026 (ESnet udplb), their headers, and host PRGs
//	rdma/      NAAICE's responder over RoCEv2 (seeds 002 and 004)
//
// An `include` that is not found beside the including file is looked up
// here, so user models can `include "lib/inet.nsc"`.
package models

import "embed"

// FS holds every model file.
//
//go:embed lib dragonet inet ejfat rdma
var FS embed.FS
