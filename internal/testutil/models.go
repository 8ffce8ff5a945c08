package testutil

// ImpliedOperand is a model whose LPG has an AND (Both) with an operand (A)
// that the other operand implies: B only runs when A is true. Its PRG P
// hands every frame to the host.
const ImpliedOperand = `
header h { a: 8  b: 8 }
lpg L {
  node RxQueue { op input  port out -> Parse }
  node Parse { op parse h  port true -> A  port false -> Bad }
  node Bad { op drop }
  node A { op test h.a == 1  port true -> B, Both  port false -> NotA }
  node NotA { op drop "not a" }
  node B { op test h.b == 1  port true -> Both  port false -> Both }
  and Both { port true -> Yes  port false -> No }
  node Yes { op steer queue 1 }
  node No { op steer queue 2 }
}
prg P {
  node Wire [hardware] { op input  port out -> Host }
  node Host [software] { op emit }
}`
