package packet

import "strings"

// Describe is an operation's kind and a short detail, for pictures,
// comments in generated code and messages: "test ipv4.proto == 17",
// "lookup routes", "set ipv4.ttl, udp.dport", "drop bad checksum".
func (op *Op) Describe(s *Schema) string {
	if op == nil {
		return ""
	}
	var detail string
	switch op.Kind {
	case OpParse, OpExtract, OpPop, OpChecksumVerify, OpChecksumCompute, OpICRCVerify, OpICRCCompute:
		detail = headerName(s, op.Header)
	case OpPush:
		detail = headerName(s, op.Header)
		if op.After >= 0 && detail != "" {
			detail += " after " + headerName(s, op.After)
		}
	case OpTest:
		if op.Cond != nil {
			detail = op.Cond.Text
		}
	case OpSwitch:
		if op.Expr != nil {
			detail = op.Expr.Text
		}
	case OpLookup:
		if s != nil && op.Table >= 0 && op.Table < len(s.Tables) && s.Tables[op.Table].Spec != nil {
			detail = s.Tables[op.Table].Spec.Name
		}
	case OpPlace:
		if s != nil && op.State >= 0 && op.State < len(s.States) && op.Offset != nil {
			detail = s.States[op.State].Name + " at " + op.Offset.Text
		}
	case OpSet:
		var fields []string
		for _, a := range op.Assign {
			if f := fieldName(s, a.Dst); f != "" {
				fields = append(fields, f)
			}
		}
		detail = strings.Join(fields, ", ")
	default:
		detail = op.Label
	}
	if detail == "" {
		return op.Kind.String()
	}
	return op.Kind.String() + " " + detail
}

func headerName(s *Schema, h int) string {
	if s == nil || h < 0 || h >= len(s.Headers) {
		return ""
	}
	return s.Headers[h].Name
}

func fieldName(s *Schema, f FieldRef) string {
	if headerName(s, f.Header) == "" || f.Field < 0 || f.Field >= len(s.Headers[f.Header].Fields) {
		return ""
	}
	return s.FieldName(f)
}
