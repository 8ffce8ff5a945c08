package cp_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The interop client is built from the spec's message table
// (ejfat-control-plane.md §2) alone, not from loadbalancer.proto: a field
// the .proto numbers or types differently from the spec is lost on the
// wire and the test sees it. Enums are declared int32 (the same varint).

type field struct {
	name string
	num  int32
	typ  descriptorpb.FieldDescriptorProto_Type
	msg  string // message type, for TYPE_MESSAGE
	rep  bool
}

const (
	tString  = descriptorpb.FieldDescriptorProto_TYPE_STRING
	tUint32  = descriptorpb.FieldDescriptorProto_TYPE_UINT32
	tUint64  = descriptorpb.FieldDescriptorProto_TYPE_UINT64
	tInt32   = descriptorpb.FieldDescriptorProto_TYPE_INT32
	tInt64   = descriptorpb.FieldDescriptorProto_TYPE_INT64
	tFloat   = descriptorpb.FieldDescriptorProto_TYPE_FLOAT
	tBool    = descriptorpb.FieldDescriptorProto_TYPE_BOOL
	tMessage = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
)

func f(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type) field {
	return field{name: name, num: num, typ: typ}
}

func m(name string, num int32, msg string) field {
	return field{name: name, num: num, typ: tMessage, msg: msg}
}

func rep(x field) field { x.rep = true; return x }

const timestamp = ".google.protobuf.Timestamp"

// specMessages is the part of the spec's message table the test uses.
var specMessages = map[string][]field{
	"Empty":     nil,
	"SlotRange": {f("index", 1, tInt32), f("length", 2, tUint32)},
	"ReserveLoadBalancerRequest": {f("name", 2, tString), m("until", 4, timestamp), rep(f("senderAddresses", 5, tString)),
		f("ipFamily", 6, tInt32), f("strategy", 10, tString)},
	"ReserveLoadBalancerReply": {f("token", 1, tString), f("lbId", 2, tString), f("syncIpv4Address", 3, tString),
		f("syncUdpPort", 4, tUint32), f("dataIpv4Address", 5, tString), f("dataIpv6Address", 6, tString),
		f("fpgaLbId", 7, tUint32), f("syncIpv6Address", 8, tString), f("dataMinPort", 9, tUint32),
		f("dataMaxPort", 10, tUint32), f("strategy", 11, tString)},
	"LbId": {f("lbId", 2, tString)},
	"RegisterRequest": {f("lbId", 2, tString), f("name", 3, tString), f("weight", 4, tFloat), f("ipAddress", 5, tString),
		f("udpPort", 6, tUint32), f("portRange", 7, tInt32), f("minFactor", 8, tFloat), f("maxFactor", 9, tFloat),
		f("keepLbHeader", 10, tBool), rep(m("slotDemands", 12, ".loadbalancer.SlotRange"))},
	"RegisterReply": {f("token", 1, tString), f("sessionId", 2, tString)},
	"SendStateRequest": {f("sessionId", 2, tString), f("lbId", 3, tString), m("timestamp", 4, timestamp),
		f("fillPercent", 5, tFloat), f("controlSignal", 6, tFloat), f("isReady", 7, tBool),
		f("totalEventsRecv", 8, tInt64), f("totalEventsReassembled", 9, tInt64), f("totalEventsReassemblyErr", 10, tInt64),
		f("totalEventsDequeued", 11, tInt64), f("totalEventEnqueueErr", 12, tInt64), f("totalBytesRecv", 13, tInt64),
		f("totalPacketsRecv", 14, tInt64)},
	"WorkerStatus": {f("name", 1, tString), f("fillPercent", 2, tFloat), f("controlSignal", 3, tFloat),
		f("slotsAssigned", 4, tUint32), m("lastUpdated", 5, timestamp), f("ipAddress", 6, tString), f("udpPort", 7, tUint32),
		f("portRange", 8, tInt32), f("minFactor", 9, tFloat), f("maxFactor", 10, tFloat), f("keepLbHeader", 11, tBool),
		f("totalEventsRecv", 12, tInt64), f("totalEventsReassembled", 13, tInt64), f("totalEventsReassemblyErr", 14, tInt64),
		f("totalEventsDequeued", 15, tInt64), f("totalEventEnqueueErr", 16, tInt64), f("totalBytesRecv", 17, tInt64),
		f("totalPacketsRecv", 18, tInt64), rep(m("slots", 19, ".loadbalancer.SlotRange")),
		rep(m("slotDemands", 20, ".loadbalancer.SlotRange"))},
	"LoadBalancerStatusReply": {m("timestamp", 1, timestamp), f("currentEpoch", 2, tUint64),
		f("currentPredictedEventNumber", 3, tUint64), rep(m("workers", 4, ".loadbalancer.WorkerStatus")),
		rep(f("senderAddresses", 5, tString)), m("expiresAt", 6, timestamp), f("slotResolution", 11, tUint32)},
	"VersionReply": {f("commit", 1, tString), f("build", 2, tString), f("compatTag", 3, tString)},
	"ResetLoadBalancerRequest": {f("lbId", 1, tString), f("sync", 2, tBool), f("epochs", 3, tBool), f("senders", 4, tBool),
		f("workers", 5, tBool)},
	"ResetLoadBalancerReply":   {f("sync", 2, tBool), f("epochs", 3, tBool), f("senders", 4, tBool), f("workers", 5, tBool)},
	"ExtendReservationRequest": {f("lbId", 1, tString), m("until", 2, timestamp)},
	"ExtendReservationReply":   {m("until", 2, timestamp)},
	"SendersRequest":           {f("lbId", 2, tString), rep(f("senderAddresses", 3, tString))},
	"SessionSlotRanges":        {f("sessionId", 1, tString), rep(m("slots", 2, ".loadbalancer.SlotRange"))},
	"SetSlotDemandsRequest":    {f("lbId", 1, tString), rep(m("slotConstraints", 2, ".loadbalancer.SessionSlotRanges"))},
	"DeregisterRequest":        {f("lbId", 2, tString), f("sessionId", 3, tString)},
	"Overview": {f("name", 1, tString), m("reservation", 3, ".loadbalancer.ReserveLoadBalancerReply"),
		m("status", 4, ".loadbalancer.LoadBalancerStatusReply")},
	"OverviewReply":      {rep(m("loadBalancers", 1, ".loadbalancer.Overview"))},
	"TimeseriesRequest":  {rep(f("seriesSelector", 1, tString)), m("since", 2, timestamp)},
	"TimeseriesResponse": {rep(m("timeseries", 1, ".loadbalancer.Timeseries")), m("since", 2, timestamp)},
	"Timeseries": {f("name", 1, tString), f("unit", 2, tString), m("integer_samples", 3, ".loadbalancer.IntegerTimeseries"),
		m("float_samples", 4, ".loadbalancer.FloatTimeseries")},
	"FloatTimeseries":    {rep(m("data", 4, ".loadbalancer.FloatSample"))},
	"IntegerTimeseries":  {rep(m("data", 1, ".loadbalancer.IntegerSample"))},
	"FloatSample":        {f("timestamp", 1, tInt64), f("value", 2, tFloat)},
	"IntegerSample":      {f("timestamp", 1, tInt64), f("value", 2, tInt64)},
	"TokenPermission":    {f("resourceType", 1, tInt32), f("resourceId", 2, tString), f("permission", 3, tInt32)},
	"CreateTokenRequest": {f("name", 1, tString), rep(m("permissions", 2, ".loadbalancer.TokenPermission"))},
	"CreateTokenReply":   {f("token", 1, tString)},
	"TokenSelector":      {f("id", 1, tUint32), f("token", 2, tString)},
	"TokenRequest":       {m("target", 1, ".loadbalancer.TokenSelector")},
	"TokenDetails": {f("name", 1, tString), rep(m("permissions", 2, ".loadbalancer.TokenPermission")),
		f("created_at", 3, tString), f("id", 4, tUint32)},
	"ListTokenPermissionsReply": {m("token", 1, ".loadbalancer.TokenDetails")},
	"ListChildTokensReply":      {rep(m("tokens", 1, ".loadbalancer.TokenDetails"))},
}

// specFile builds the descriptor of specMessages in package loadbalancer.
func specFile(t testing.TB) protoreflect.FileDescriptor {
	fd := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("spec_interop.proto"),
		Package:    proto.String("loadbalancer"),
		Dependency: []string{"google/protobuf/timestamp.proto"},
		Syntax:     proto.String("proto3"),
	}
	for name, fields := range specMessages {
		d := &descriptorpb.DescriptorProto{Name: proto.String(name)}
		for _, x := range fields {
			label := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
			if x.rep {
				label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
			}
			fp := &descriptorpb.FieldDescriptorProto{Name: proto.String(x.name), Number: proto.Int32(x.num),
				Type: x.typ.Enum(), Label: label.Enum(), JsonName: proto.String(x.name)}
			if x.msg != "" {
				fp.TypeName = proto.String(x.msg)
			}
			d.Field = append(d.Field, fp)
		}
		fd.MessageType = append(fd.MessageType, d)
	}
	file, err := protodesc.NewFile(fd, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	return file
}

// dyn is a client that calls by method name with dynamic messages.
type dyn struct {
	t     testing.TB
	conn  *grpc.ClientConn
	file  protoreflect.FileDescriptor
	token string
}

// msg makes a message of type name with the fields given.
func (d *dyn) msg(name string, fields map[string]any) *dynamicpb.Message {
	md := d.file.Messages().ByName(protoreflect.Name(name))
	if md == nil {
		d.t.Fatalf("no message %s in the spec table", name)
	}
	x := dynamicpb.NewMessage(md)
	for k, v := range fields {
		fd := md.Fields().ByName(protoreflect.Name(k))
		switch v := v.(type) {
		case []string:
			l := x.Mutable(fd).List()
			for _, s := range v {
				l.Append(protoreflect.ValueOfString(s))
			}
		case []*dynamicpb.Message:
			l := x.Mutable(fd).List()
			for _, m := range v {
				l.Append(protoreflect.ValueOfMessage(m))
			}
		case proto.Message:
			x.Set(fd, protoreflect.ValueOfMessage(v.ProtoReflect()))
		default:
			x.Set(fd, protoreflect.ValueOf(v))
		}
	}
	return x
}

// call invokes LoadBalancer/method, answering a message of type reply.
func (d *dyn) call(method string, req *dynamicpb.Message, reply string) (*dynamicpb.Message, error) {
	out := d.msg(reply, nil)
	err := d.conn.Invoke(as(d.token), "/loadbalancer.LoadBalancer/"+method, req, out)
	return out, err
}

func (d *dyn) must(method string, req *dynamicpb.Message, reply string) *dynamicpb.Message {
	d.t.Helper()
	out, err := d.call(method, req, reply)
	if err != nil {
		d.t.Fatalf("%s: %v", method, err)
	}
	return out
}

func get(x protoreflect.Message, name string) protoreflect.Value {
	return x.Get(x.Descriptor().Fields().ByName(protoreflect.Name(name)))
}

// interop reserves, registers, sends state, reads status and frees through
// a spec-built client at addr with the admin token.
func interop(t *testing.T, d *dyn) {
	until := timestamppb.New(time.Now().Add(time.Hour))
	res := d.must("ReserveLoadBalancer", d.msg("ReserveLoadBalancerRequest", map[string]any{
		"name": "interop", "until": until, "senderAddresses": []string{"192.0.2.1"}, "strategy": "static"}),
		"ReserveLoadBalancerReply")
	lbID, lbToken := get(res, "lbId").String(), get(res, "token").String()
	if lbID == "" || lbToken == "" || get(res, "syncUdpPort").Uint() == 0 || get(res, "strategy").String() != "static" ||
		get(res, "dataMinPort").Uint() == 0 {
		t.Fatalf("reserve reply incomplete: %v", res)
	}
	lb := &dyn{t: d.t, conn: d.conn, file: d.file, token: lbToken}
	reg := lb.must("Register", lb.msg("RegisterRequest", map[string]any{
		"lbId": lbID, "name": "recv-1", "weight": float32(1), "ipAddress": "192.0.2.10", "udpPort": uint32(19522),
		"portRange": int32(2), "minFactor": float32(0.5), "maxFactor": float32(2), "keepLbHeader": true}),
		"RegisterReply")
	sess := &dyn{t: d.t, conn: d.conn, file: d.file, token: get(reg, "token").String()}
	sid := get(reg, "sessionId").String()
	sess.must("SendState", sess.msg("SendStateRequest", map[string]any{
		"sessionId": sid, "lbId": lbID, "timestamp": timestamppb.Now(), "fillPercent": float32(0.25),
		"controlSignal": float32(-0.5), "isReady": true, "totalEventsRecv": int64(10), "totalEventsReassembled": int64(9),
		"totalEventsReassemblyErr": int64(1), "totalEventsDequeued": int64(8), "totalEventEnqueueErr": int64(2),
		"totalBytesRecv": int64(1 << 33), "totalPacketsRecv": int64(12345)}), "Empty")
	st := lb.must("LoadBalancerStatus", lb.msg("LbId", map[string]any{"lbId": lbID}), "LoadBalancerStatusReply")
	if get(st, "slotResolution").Uint() != 512 {
		t.Errorf("slotResolution %v", get(st, "slotResolution"))
	}
	if got := get(st, "senderAddresses").List(); got.Len() != 1 || got.Get(0).String() != "192.0.2.1" {
		t.Errorf("senderAddresses %v", got)
	}
	if get(get(st, "expiresAt").Message(), "seconds").Int() != until.Seconds {
		t.Errorf("expiresAt %v, want %v", get(st, "expiresAt"), until)
	}
	ws := get(st, "workers").List()
	if ws.Len() != 1 {
		t.Fatalf("%d workers, want 1", ws.Len())
	}
	w := ws.Get(0).Message()
	want := map[string]any{"name": "recv-1", "ipAddress": "192.0.2.10", "udpPort": uint64(19522), "portRange": int64(2),
		"minFactor": 0.5, "maxFactor": 2.0, "keepLbHeader": true, "fillPercent": 0.25, "controlSignal": -0.5,
		"totalEventsRecv": int64(10), "totalEventsReassembled": int64(9), "totalEventsReassemblyErr": int64(1),
		"totalEventsDequeued": int64(8), "totalEventEnqueueErr": int64(2), "totalBytesRecv": int64(1 << 33),
		"totalPacketsRecv": int64(12345)}
	for k, v := range want {
		if got := get(w, k).Interface(); got != v && !(isFloat(got) && float64(got.(float32)) == v) && !sameUint(got, v) {
			t.Errorf("worker %s = %v (%T), want %v", k, got, got, v)
		}
	}
	if !get(w, "lastUpdated").Message().IsValid() {
		t.Error("worker lastUpdated not set")
	}
	lb.must("FreeLoadBalancer", lb.msg("LbId", map[string]any{"lbId": lbID}), "Empty")
	if _, err := lb.call("LoadBalancerStatus", lb.msg("LbId", map[string]any{"lbId": lbID}), "LoadBalancerStatusReply"); err == nil {
		t.Error("status of a freed LB answered")
	}
}

func isFloat(v any) bool { _, ok := v.(float32); return ok }

// sameUint compares a uint32/int32 reflect value with the uint64/int64 wanted.
func sameUint(got, want any) bool {
	switch g := got.(type) {
	case uint32:
		return uint64(g) == want
	case int32:
		return int64(g) == want
	}
	return false
}

func TestInteropSpecClient(t *testing.T) {
	c := startCP(t, cpConfig())
	d := &dyn{t: t, conn: dial(t, c.grpc), file: specFile(t), token: c.admin}
	v := d.must("Version", d.msg("Empty", nil), "VersionReply")
	if get(v, "compatTag").String() == "" {
		t.Error("Version: no compatTag")
	}
	interop(t, d)
}

// list returns the messages of repeated field name.
func list(x protoreflect.Message, name string) []protoreflect.Message {
	l := get(x, name).List()
	out := make([]protoreflect.Message, l.Len())
	for i := range out {
		out[i] = l.Get(i).Message()
	}
	return out
}

// joined returns the strings of repeated field name, comma-separated.
func joined(x protoreflect.Message, name string) string {
	l := get(x, name).List()
	var out []string
	for i := range l.Len() {
		out = append(out, l.Get(i).String())
	}
	return strings.Join(out, ",")
}

// TestInteropEveryRPC calls the RPCs the main flow does not, through the
// spec-built client, and checks what each answers.
func TestInteropEveryRPC(t *testing.T) {
	c := startCP(t, cpConfig())
	d := &dyn{t: t, conn: dial(t, c.grpc), file: specFile(t), token: c.admin}
	res := d.must("ReserveLoadBalancer", d.msg("ReserveLoadBalancerRequest", map[string]any{
		"name": "every", "senderAddresses": []string{"192.0.2.1"}}), "ReserveLoadBalancerReply")
	lbID := get(res, "lbId").String()
	lbMsg := d.msg("LbId", map[string]any{"lbId": lbID})
	lbStatus := func() protoreflect.Message {
		return d.must("LoadBalancerStatus", lbMsg, "LoadBalancerStatusReply")
	}
	if got := d.must("GetLoadBalancer", lbMsg, "ReserveLoadBalancerReply"); get(got, "lbId").String() != lbID ||
		get(got, "token").String() != "" || get(got, "strategy").String() != "dynamic" {
		t.Errorf("GetLoadBalancer: %v", got)
	}

	d.must("AddSenders", d.msg("SendersRequest", map[string]any{"lbId": lbID, "senderAddresses": []string{"192.0.2.7"}}), "Empty")
	d.must("RemoveSenders", d.msg("SendersRequest", map[string]any{"lbId": lbID, "senderAddresses": []string{"192.0.2.1"}}), "Empty")
	if got := joined(lbStatus(), "senderAddresses"); got != "192.0.2.7" {
		t.Errorf("senders after AddSenders and RemoveSenders: %s", got)
	}
	until := timestamppb.New(time.Now().Add(2 * time.Hour).Truncate(time.Second))
	ext := d.must("ExtendReservation", d.msg("ExtendReservationRequest", map[string]any{"lbId": lbID, "until": until}),
		"ExtendReservationReply")
	if get(get(ext, "until").Message(), "seconds").Int() != until.Seconds ||
		get(get(lbStatus(), "expiresAt").Message(), "seconds").Int() != until.Seconds {
		t.Errorf("ExtendReservation: %v", ext)
	}

	reg := d.must("Register", d.msg("RegisterRequest", map[string]any{"lbId": lbID, "name": "r", "weight": float32(1),
		"ipAddress": "192.0.2.10", "udpPort": uint32(19522)}), "RegisterReply")
	sid := get(reg, "sessionId").String()
	slot := d.msg("SlotRange", map[string]any{"index": int32(3), "length": uint32(4)})
	d.must("SetSlotDemands", d.msg("SetSlotDemandsRequest", map[string]any{"lbId": lbID, "slotConstraints": []*dynamicpb.Message{
		d.msg("SessionSlotRanges", map[string]any{"sessionId": sid, "slots": []*dynamicpb.Message{slot}})}}), "Empty")
	if ds := list(list(lbStatus(), "workers")[0], "slotDemands"); len(ds) != 1 || get(ds[0], "index").Int() != 3 ||
		get(ds[0], "length").Uint() != 4 {
		t.Errorf("slot demands after SetSlotDemands: %v", ds)
	}
	for i, fill := range []float32{0.25, 0.5} {
		d.must("SendState", d.msg("SendStateRequest", map[string]any{"lbId": lbID, "sessionId": sid, "fillPercent": fill,
			"totalBytesRecv": int64(100 * (i + 1))}), "Empty")
	}
	prefix := "/lb/" + lbID + "/session/" + sid + "/"
	ts := d.must("Timeseries", d.msg("TimeseriesRequest", map[string]any{
		"seriesSelector": []string{prefix + "fill_percent", prefix + "total_bytes_recv"}}), "TimeseriesResponse")
	series := list(ts, "timeseries")
	if len(series) != 2 || get(series[0], "name").String() != prefix+"fill_percent" ||
		get(series[1], "name").String() != prefix+"total_bytes_recv" {
		t.Fatalf("Timeseries: %v", ts)
	}
	// Every series is float, as udplbd2's; the first sample is the ready
	// state Register stores.
	fs := list(get(series[0], "float_samples").Message(), "data")
	bs := list(get(series[1], "float_samples").Message(), "data")
	if len(fs) != 3 || get(fs[2], "value").Float() != 0.5 || get(fs[2], "timestamp").Int() < time.Now().Add(-time.Minute).UnixMilli() ||
		len(bs) != 3 || get(bs[2], "value").Float() != 200 {
		t.Errorf("samples: fill %v, bytes %v", fs, bs)
	}

	ov := list(d.must("Overview", d.msg("Empty", nil), "OverviewReply"), "loadBalancers")
	if len(ov) != 1 || get(ov[0], "name").String() != "every" ||
		get(get(ov[0], "reservation").Message(), "lbId").String() != lbID ||
		len(list(get(ov[0], "status").Message(), "workers")) != 1 {
		t.Errorf("Overview: %v", ov)
	}

	ro := d.msg("TokenPermission", map[string]any{"resourceType": int32(1), "resourceId": lbID, "permission": int32(0)})
	made := d.must("CreateToken", d.msg("CreateTokenRequest", map[string]any{"name": "ro",
		"permissions": []*dynamicpb.Message{ro}}), "CreateTokenReply")
	roDyn := &dyn{t: t, conn: d.conn, file: d.file, token: get(made, "token").String()}
	self := roDyn.msg("TokenRequest", map[string]any{"target": roDyn.msg("TokenSelector", nil)})
	det := get(roDyn.must("ListTokenPermissions", self, "ListTokenPermissionsReply"), "token").Message()
	ps := list(det, "permissions")
	if get(det, "name").String() != "ro" || get(det, "id").Uint() == 0 || get(det, "created_at").String() == "" ||
		len(ps) != 1 || get(ps[0], "resourceType").Int() != 1 || get(ps[0], "resourceId").String() != lbID ||
		get(ps[0], "permission").Int() != 0 {
		t.Errorf("ListTokenPermissions: %v", det)
	}
	var names []string
	for _, k := range list(d.must("ListChildTokens", self, "ListChildTokensReply"), "tokens") {
		names = append(names, get(k, "name").String())
	}
	if strings.Join(names, ",") != "reservation-"+lbID+",session-"+sid+",ro" {
		t.Errorf("the admin's children: %v", names)
	}
	byID := d.msg("TokenRequest", map[string]any{"target": d.msg("TokenSelector", map[string]any{"id": uint32(get(det, "id").Uint())})})
	d.must("RevokeToken", byID, "Empty")
	if _, err := roDyn.call("ListTokenPermissions", self, "ListTokenPermissionsReply"); status.Code(err) != codes.NotFound {
		t.Errorf("a revoked token: %v", err)
	}

	rr := d.must("ResetLoadBalancer", d.msg("ResetLoadBalancerRequest", map[string]any{"lbId": lbID, "workers": true,
		"sync": true}), "ResetLoadBalancerReply")
	if !get(rr, "workers").Bool() || !get(rr, "sync").Bool() || get(rr, "epochs").Bool() || get(rr, "senders").Bool() {
		t.Errorf("ResetLoadBalancer reply: %v", rr)
	}
	if n := len(list(lbStatus(), "workers")); n != 0 {
		t.Errorf("%d workers after reset", n)
	}
	reg = d.must("Register", d.msg("RegisterRequest", map[string]any{"lbId": lbID, "name": "r2", "weight": float32(1),
		"ipAddress": "192.0.2.11", "udpPort": uint32(19522)}), "RegisterReply")
	d.must("Deregister", d.msg("DeregisterRequest", map[string]any{"lbId": lbID, "sessionId": get(reg, "sessionId").String()}), "Empty")
	if n := len(list(lbStatus(), "workers")); n != 0 {
		t.Errorf("%d workers after Deregister", n)
	}
}
