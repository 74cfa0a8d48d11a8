package protocol

import (
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readDirect drives a Turn over an SSEReader on the calling goroutine, the
// way Turn's doc shows: what ReadTurn must give, batches, buffers and its
// framing goroutine notwithstanding.
func readDirect(in string, opts StreamOptions) ([]Event, *Summary) {
	var evs []Event
	t := NewTurn(opts)
	r := NewSSEReader(strings.NewReader(in), opts.MaxEventSize)
	defer r.Close()
	var err error
	for {
		var ev SSEEvent
		if ev, err = r.Next(); err != nil {
			break
		}
		t.Feed(ev, record(&evs))
	}
	return evs, t.Finish(err, record(&evs))
}

// ReadTurn hands events over in batches from a goroutine that reads the
// body in large buffers: whatever the body's read sizes, the events and the
// summary are those of the reader driven directly, over streams longer
// than a batch and than a buffer, cut ones and ones with ill-formed UTF-8.
func TestReadTurnMatchesDirectReading(t *testing.T) {
	long := string(v2Stream(1200))
	for name, in := range map[string]string{
		"long":         long,
		"cut":          long[:len(long)-300],
		"badUTF8":      strings.Repeat(v2(`"type": "chat", "content": "a`+"\xff\xe2\x82"+`b"}`), 700) + v2(`"type": "done"}`),
		"tooLarge":     strings.Repeat(v2(`"type": "chat", "content": "x"}`), 700) + v2(`"type": "chat", "content": "`+strings.Repeat("y", 5000)+`"}`),
		"afterDone":    long + v2(`"type": "chat", "content": "late"}`),
		"undetected":   strings.Repeat("data: [1]\n\n", 300),
		"unterminated": long[:len(long)-1],
		"bom":          "\xEF\xBB\xBF" + long,
		"twoBOMs":      "\xEF\xBB\xBF\xEF\xBB\xBF" + long,
		"idOnly":       strings.Repeat("id: 7\r\n\r\nevent: x\n\n: c\n"+v2(`"type": "chat", "content": "x"}`), 400),
		"crOnly":       strings.ReplaceAll(long, "\r\n", "\r"),
		"tailNoBlank":  long + "data: {}\n",
	} {
		opts := StreamOptions{TurnID: "t1", IdleTimeout: -1, MaxEventSize: 4096}
		wantEvs, wantSum := readDirect(in, opts)
		for how, body := range map[string]io.Reader{
			"whole":      strings.NewReader(in),
			"halves":     iotest.HalfReader(strings.NewReader(in)),
			"random":     &randomChunks{s: in, rng: rand.New(rand.NewPCG(uint64(len(in)), 3))},
			"dataErrEOF": iotest.DataErrReader(strings.NewReader(in)),
		} {
			var evs []Event
			sum := ReadTurn(context.Background(), body, opts, record(&evs))
			if diff := cmp.Diff(wantEvs, evs); diff != "" {
				t.Errorf("%s, %s: events (-direct +ReadTurn):\n%s", name, how, diff)
			}
			if diff := cmp.Diff(wantSum, sum); diff != "" {
				t.Errorf("%s, %s: summary (-direct +ReadTurn):\n%s", name, how, diff)
			}
		}
	}
}

// emptyReads returns (0, nil) many times before each byte: legal for an
// io.Reader, and no reason for go-sse's scanner to give up.
type emptyReads struct {
	s string
	k int
}

func (r *emptyReads) Read(p []byte) (int, error) {
	if r.k++; r.k%150 != 0 {
		return 0, nil
	}
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:1], r.s)
	r.s = r.s[n:]
	return n, nil
}

func TestReadTurnEmptyReads(t *testing.T) {
	in := v2(`"type": "chat", "content": "x"}`) + v2(`"type": "done"}`)
	var evs []Event
	sum := ReadTurn(context.Background(), &emptyReads{s: in}, StreamOptions{TurnID: "t1", IdleTimeout: -1}, record(&evs))
	if sum.Outcome != OutcomeCompleted || sum.Text != "x" {
		t.Fatalf("outcome %s (%s), text %q; want completed with x", sum.Outcome, evs[len(evs)-1].TurnEnd.Reason, sum.Text)
	}
}
