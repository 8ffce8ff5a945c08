package cp

import (
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// dashboardRow is one LB instance on the dashboard.
type dashboardRow struct {
	Instance int
	Res      *Reservation
	Epoch    uint64
	Sessions []dashboardSession
	Epochs   []dashboardEpoch // the live ones, newest first
}

// dashboardEpoch is a live epoch's calendar as a picture: 512 slots, 32 a
// row, each in its session's color (gray: unassigned, dropped).
type dashboardEpoch struct {
	Number, Boundary uint64
	Picture          template.HTML
}

type dashboardSession struct {
	Session
	Ready bool
	Slots int
	Fill  float32 // percent
	Color string  // its slots' color in the calendar pictures
}

// palette colors the sessions of a reservation in turn.
var palette = []string{"#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bb5566", "#004488", "#ddaa33", "#999933"}

// calendarPicture draws a calendar as an SVG grid of its slots.
func calendarPicture(cal []int64, color map[int64]string) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%d" height="%d">`, 32*9, (len(cal)+31)/32*9)
	for i, s := range cal {
		c := color[s]
		if c == "" {
			c = "#dddddd"
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="8" height="8" fill="%s"><title>slot %d: session %d</title></rect>`, i%32*9, i/32*9, c, i, s)
	}
	b.WriteString("</svg>")
	return template.HTML(b.String()) // numbers and our own colors only
}

var dashboardPage = template.Must(template.New("dashboard").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>nsc cp</title><meta http-equiv="refresh" content="2">
<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}
.bar{background:#eee;width:100px;height:10px}.bar div{background:#48c;height:10px}</style></head>
<body><h1>nsc cp</h1><p>{{.Now}}</p>
{{range $row := .Rows}}<h2>instance {{.Instance}}{{with .Res}}: LB {{.ID}} {{.Name}} ({{.Strategy}}){{else}}: free{{end}}</h2>
{{with .Res}}<p>epoch {{$row.Epoch}}; senders {{.Senders}}; expires {{if .Until.IsZero}}never{{else}}{{.Until}}{{end}}</p>{{end}}
{{if .Sessions}}<table><tr><th>session</th><th></th><th>name</th><th>address</th><th>weight</th><th>ready</th><th>slots</th><th>fill</th><th>control</th><th>events reassembled</th></tr>
{{range .Sessions}}<tr><td>{{.ID}}</td><td style="background:{{.Color}}"></td><td>{{.Name}}</td><td>{{.IP}}:{{.Port}}</td><td>{{.Weight}}</td><td>{{.Ready}}</td><td>{{.Slots}}</td>
<td><div class="bar"><div style="width:{{.Fill}}px"></div></div></td><td>{{with .State}}{{.Control}}{{end}}</td><td>{{with .State}}{{.Reassembled}}{{end}}</td></tr>
{{end}}</table>{{end}}
{{range .Epochs}}<h3>epoch {{.Number}} from event {{.Boundary}}</h3>{{.Picture}}{{end}}{{end}}</body></html>
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
		es := c.store.Epochs(r.ID)
		if len(es) > 0 {
			row.Epoch, cal = es[len(es)-1].Number, es[len(es)-1].Calendar
		}
		color := map[int64]string{}
		for i, x := range c.store.Sessions(r.ID) {
			color[x.ID] = palette[i%len(palette)]
			d := dashboardSession{Session: x, Ready: c.ready(x, now), Slots: slotCount(cal, x.ID), Color: color[x.ID]}
			if x.State != nil {
				d.Fill = 100 * x.State.Fill
			}
			row.Sessions = append(row.Sessions, d)
		}
		for i := len(es) - 1; i >= 0; i-- {
			row.Epochs = append(row.Epochs, dashboardEpoch{es[i].Number, es[i].Boundary, calendarPicture(es[i].Calendar, color)})
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := dashboardPage.Execute(w, map[string]any{"Now": now.Format(time.RFC3339), "Rows": rows}); err != nil {
		c.logErr("dashboard", err)
	}
}
