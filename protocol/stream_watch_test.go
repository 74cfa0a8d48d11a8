package protocol

import (
	"context"
	"io"
	"math/rand/v2"
	"reflect"
	"strconv"
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
		for _, seq := range []bool{false, true} {
			opts.Sequential = seq
			for how, body := range map[string]io.Reader{
				"whole":      strings.NewReader(in),
				"halves":     iotest.HalfReader(strings.NewReader(in)),
				"random":     &randomChunks{s: in, rng: rand.New(rand.NewPCG(uint64(len(in)), 3))},
				"dataErrEOF": iotest.DataErrReader(strings.NewReader(in)),
			} {
				var evs []Event
				sum := ReadTurn(context.Background(), body, opts, record(&evs))
				if diff := cmp.Diff(wantEvs, evs); diff != "" {
					t.Errorf("%s, %s, sequential %v: events (-direct +ReadTurn):\n%s", name, how, seq, diff)
				}
				if diff := cmp.Diff(wantSum, sum); diff != "" {
					t.Errorf("%s, %s, sequential %v: summary (-direct +ReadTurn):\n%s", name, how, seq, diff)
				}
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

// mixedStream builds a long stream of everything the reader must get
// right, from a seed: AgentSmithy deltas, multi-line and non-JSON data,
// event, id (some with NUL), retry and unknown fields, comments, runs of
// blank lines, CR, LF and CRLF line ends, ill-formed UTF-8, and events of
// tens of KiB that straddle any read.
func mixedStream(seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, 11))
	var b strings.Builder
	if rng.IntN(3) == 0 {
		b.WriteString("\xEF\xBB\xBF")
	}
	eols := []string{"\n", "\r", "\r\n"}
	eol := func() string { return eols[rng.IntN(len(eols))] }
	for i := 0; i < n; i++ {
		switch k := rng.IntN(20); {
		case k < 10:
			b.WriteString(`data: {"type": "chat", "content": "delta ` + strconv.Itoa(i) + `", "dialog_id": "d1"}` + eol())
		case k == 10:
			b.WriteString("data: first" + eol() + "data:second\xff\xe2" + eol())
		case k == 11:
			b.WriteString("event: custom" + eol() + `data: {"type": "reasoning", "content": "r", "dialog_id": "d1"}` + eol())
		case k == 12:
			b.WriteString("id: " + strconv.Itoa(i) + eol())
		case k == 13:
			b.WriteString("id: x\x00y" + eol() + "retry: " + strconv.Itoa(rng.IntN(5000)) + eol())
		case k == 14:
			b.WriteString(": ping" + eol())
		case k == 15:
			b.WriteString("unknown: field" + eol() + "data" + eol())
		case k == 16:
			b.WriteString(`data: {"type": "chat", "content": "` + strings.Repeat("é", 8000+rng.IntN(12000)) + `", "dialog_id": "d1"}` + eol())
		case k == 17:
			b.WriteString("data: [1, 2]" + eol())
		default:
			b.WriteString(eol()) // an extra blank line
		}
		b.WriteString(eol()) // the blank line that dispatches
	}
	if rng.IntN(2) == 0 {
		b.WriteString(`data: {"type": "done", "dialog_id": "d1"}` + eol() + eol())
	}
	if rng.IntN(3) == 0 {
		b.WriteString("data: a cut tail") // no line end: the stream was cut
	}
	return b.String()
}

// chunkReader returns reads of random sizes up to max.
type chunkReader struct {
	s   string
	rng *rand.Rand
	max int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+r.rng.IntN(r.max))], r.s)
	r.s = r.s[n:]
	return n, nil
}

// ReadTurn over long mixed streams read in chunks of random sizes, small
// (segments framed by the consumer) and large (segments framed on their
// own goroutines, several at once), and sequentially (StreamOptions.
// Sequential: everything on the caller's goroutine): what the reader
// driven directly gives.
func TestReadTurnSegmentsMatchDirectReading(t *testing.T) {
	for seed := range uint64(4) {
		in := mixedStream(seed, 1500)
		opts := StreamOptions{TurnID: "t1", IdleTimeout: -1}
		wantEvs, wantSum := readDirect(in, opts)
		for _, max := range []int{7, 300, 20_000, 200_000} {
			for _, seq := range []bool{false, true} {
				opts.Sequential = seq
				var evs []Event
				sum := ReadTurn(context.Background(), &chunkReader{s: in, rng: rand.New(rand.NewPCG(seed, uint64(max))), max: max}, opts, record(&evs))
				// reflect first: cmp takes seconds over megabytes of events.
				if !reflect.DeepEqual(wantEvs, evs) {
					t.Errorf("seed %d, reads up to %d bytes, sequential %v: events (-direct +ReadTurn):\n%s", seed, max, seq, cmp.Diff(wantEvs, evs))
				}
				if !reflect.DeepEqual(wantSum, sum) {
					t.Errorf("seed %d, reads up to %d bytes, sequential %v: summary (-direct +ReadTurn):\n%s", seed, max, seq, cmp.Diff(wantSum, sum))
				}
			}
		}
	}
}
