package cp

import (
	"html/template"
	"net/http"
	"time"
)

// dashboardRow is one LB instance on the dashboard.
type dashboardRow struct {
	Instance int
	Res      *Reservation
	Epoch    uint64
	Sessions []dashboardSession
}

type dashboardSession struct {
	Session
	Ready bool
	Slots int
	Fill  float32 // percent
}

var dashboardPage = template.Must(template.New("dashboard").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>nsc cp</title><meta http-equiv="refresh" content="2">
<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}
.bar{background:#eee;width:100px;height:10px}.bar div{background:#48c;height:10px}</style></head>
<body><h1>nsc cp</h1><p>{{.Now}}</p>
{{range $row := .Rows}}<h2>instance {{.Instance}}{{with .Res}}: LB {{.ID}} {{.Name}} ({{.Strategy}}){{else}}: free{{end}}</h2>
{{with .Res}}<p>epoch {{$row.Epoch}}; senders {{.Senders}}; expires {{if .Until.IsZero}}never{{else}}{{.Until}}{{end}}</p>{{end}}
{{if .Sessions}}<table><tr><th>session</th><th>name</th><th>address</th><th>weight</th><th>ready</th><th>slots</th><th>fill</th><th>control</th><th>events reassembled</th></tr>
{{range .Sessions}}<tr><td>{{.ID}}</td><td>{{.Name}}</td><td>{{.IP}}:{{.Port}}</td><td>{{.Weight}}</td><td>{{.Ready}}</td><td>{{.Slots}}</td>
<td><div class="bar"><div style="width:{{.Fill}}px"></div></div></td><td>{{with .State}}{{.Control}}{{end}}</td><td>{{with .State}}{{.Reassembled}}{{end}}</td></tr>
{{end}}</table>{{end}}{{end}}</body></html>
`))

// dashboard serves a read-only page of the instances and their sessions.
func (c *CP) dashboard(w http.ResponseWriter, _ *http.Request) {
	now := c.cfg.Now()
	rows := make([]dashboardRow, c.cfg.Instances)
	for i := range rows {
		rows[i].Instance = i
	}
	for _, r := range c.store.Reservations() {
		row := &rows[r.Instance]
		row.Res = &r
		var cal []int64
		if es := c.store.Epochs(r.ID); len(es) > 0 {
			row.Epoch, cal = es[len(es)-1].Number, es[len(es)-1].Calendar
		}
		for _, x := range c.store.Sessions(r.ID) {
			d := dashboardSession{Session: x, Ready: c.ready(x, now), Slots: slotCount(cal, x.ID)}
			if x.State != nil {
				d.Fill = 100 * x.State.Fill
			}
			row.Sessions = append(row.Sessions, d)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := dashboardPage.Execute(w, map[string]any{"Now": now.Format(time.RFC3339), "Rows": rows}); err != nil {
		c.logErr("dashboard", err)
	}
}
