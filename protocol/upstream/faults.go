package upstream

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FaultHeader names the request header that injects faults into one chat
// request, e.g. "X-Smith-Fault: cut-mid-event" or "stall=3, no-done".
const FaultHeader = "X-Smith-Fault"

// Fault is one injected failure: a name from FaultNames and an optional
// argument ("stall=3" is Fault{"stall", "3"}).
type Fault struct {
	Name string
	Arg  string
}

func (f Fault) String() string {
	if f.Arg == "" {
		return f.Name
	}
	return f.Name + "=" + f.Arg
}

// FaultDoc documents one fault: its form and what the client sees.
type FaultDoc struct{ Name, Help string }

// FaultNames documents every fault, for help texts and docs. The slice is
// new on every call.
func FaultNames() []FaultDoc { return slices.Clone(faultDocs) }

var faultDocs = []FaultDoc{
	{"cut-mid-event[=N]", "send N complete events (default: half of the turn's), then half of the next event's bytes, then end the body"},
	{"stall[=SECONDS]", "after the first event, send nothing at all (not even pings) for SECONDS (default 5), then go on"},
	{"http-500", "answer 500 with the plain-text body 'Internal Server Error' (an uncaught server exception)"},
	{"http-429", "answer 429 with Retry-After: 1 and {\"detail\": \"Too Many Requests\"}"},
	{"status=CODE", "answer CODE with {\"detail\": \"Injected fault: HTTP CODE\"}"},
	{"not-sse", "answer 200 with Content-Type text/html and an HTML page"},
	{"huge-event[=MiB]", "send one text delta of MiB mebibytes (default 17, above smith's 16 MiB event limit) after the first event"},
	{"invalid-json", "send one event whose data is not valid JSON after the first event, then go on"},
	{"no-done", "send every event except the terminal one (done, message_end, ...), then end the body"},
	{"pings-only[=SECONDS]", "after the first event, send nothing but keep-alive comments, one every SECONDS (default 1), until the client goes away"},
	{"drip[=SECONDS]", "after the first event, send the rest of the turn one byte at a time, one every SECONDS (default 0.5)"},
}

var faultNames = []string{"cut-mid-event", "stall", "http-500", "http-429", "status", "not-sse", "huge-event", "invalid-json", "no-done", "pings-only", "drip"}

// ParseFaults parses a comma-separated list such as "stall=2,no-done".
func ParseFaults(spec string) ([]Fault, error) {
	var out []Fault
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, arg, _ := strings.Cut(part, "=")
		f := Fault{Name: strings.ToLower(strings.TrimSpace(name)), Arg: strings.TrimSpace(arg)}
		if !slices.Contains(faultNames, f.Name) {
			return nil, fmt.Errorf("unknown fault %q (known: %s)", f.Name, strings.Join(faultNames, ", "))
		}
		if err := f.validate(); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func (f Fault) validate() error {
	if f.Arg == "" {
		if f.Name == "status" {
			return fmt.Errorf("fault status needs a code, e.g. status=503")
		}
		return nil
	}
	switch f.Name {
	case "cut-mid-event", "stall", "huge-event", "status", "pings-only", "drip":
		n, err := strconv.ParseFloat(f.Arg, 64)
		if err != nil || n < 0 || (f.Name == "status" && (n < 100 || n > 599)) {
			return fmt.Errorf("fault %s: bad argument %q", f.Name, f.Arg)
		}
		return nil
	default:
		return fmt.Errorf("fault %s takes no argument", f.Name)
	}
}

func (f Fault) num(def float64) float64 {
	if n, err := strconv.ParseFloat(f.Arg, 64); err == nil {
		return n
	}
	return def
}

// requestFaults are the server's faults plus the request's header.
func (s *Server) requestFaults(r *http.Request) ([]Fault, error) {
	faults := slices.Clone(s.opts.Faults)
	for _, h := range r.Header.Values(FaultHeader) {
		fs, err := ParseFaults(h)
		if err != nil {
			return nil, err
		}
		faults = append(faults, fs...)
	}
	return faults, nil
}

// answerFault writes the response of a fault that replaces the whole
// answer; it reports whether it did.
func answerFault(w http.ResponseWriter, faults []Fault) bool {
	for _, f := range faults {
		switch f.Name {
		case "http-500":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("Internal Server Error"))
			return true
		case "http-429":
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusTooManyRequests, detail("Too Many Requests"))
			return true
		case "status":
			code := int(f.num(500))
			writeJSON(w, code, detail(fmt.Sprintf("Injected fault: HTTP %d", code)))
			return true
		case "not-sse":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("<!doctype html>\n<html><body><h1>Welcome to nginx!</h1></body></html>\n"))
			return true
		}
	}
	return false
}

// applyFaults rewrites a turn's ops. text makes a text delta frame of the
// dialect (for huge-event).
func applyFaults(ops []op, faults []Fault, fr framing, text func(string) []byte) []op {
	for _, f := range faults {
		switch f.Name {
		case "no-done":
			ops = slices.DeleteFunc(ops, func(o op) bool { return o.terminal })
		case "invalid-json":
			ops = insertAfterFirstFrame(ops, op{frame: fr.frame([]byte(`{"type": "chat", "content": "unterminated`))})
		case "huge-event":
			size := int(f.num(17) * (1 << 20))
			ops = insertAfterFirstFrame(ops, op{frame: text(strings.Repeat("x", size)), delta: true})
		case "stall":
			d := time.Duration(f.num(5) * float64(time.Second))
			ops = insertAfterFirstFrame(ops, op{stall: d})
		case "pings-only":
			d := time.Duration(f.num(1) * float64(time.Second))
			ops = insertAfterFirstFrame(ops, op{pings: d, frame: fr.comment("ping")})
		case "drip":
			d := time.Duration(f.num(0.5) * float64(time.Second))
			first := true
			for i := range ops {
				if ops[i].isFrame() && !first {
					ops[i].drip = d
				}
				if ops[i].isFrame() {
					first = false
				}
			}
		}
	}
	for _, f := range faults {
		if f.Name == "cut-mid-event" {
			ops = cutMidEvent(ops, f)
		}
	}
	return ops
}

func insertAfterFirstFrame(ops []op, extra op) []op {
	for i, o := range ops {
		if o.isFrame() {
			return slices.Insert(ops, i+1, extra)
		}
	}
	return append(ops, extra)
}

// cutMidEvent keeps N complete frames, then half of the next frame.
func cutMidEvent(ops []op, f Fault) []op {
	frames := 0
	for _, o := range ops {
		if o.isFrame() {
			frames++
		}
	}
	keep := int(f.num(float64(frames / 2)))
	if keep >= frames {
		keep = frames - 1
	}
	seen := 0
	for i, o := range ops {
		if !o.isFrame() {
			continue
		}
		if seen == keep {
			half := o
			half.cut = true
			half.record, half.terminal = nil, false // the tool (action) already ran when its event was cut
			return append(slices.Clone(ops[:i]), half)
		}
		seen++
	}
	return ops
}
