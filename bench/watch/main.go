// Command watch measures how long `smith serve` takes to answer an editor's
// initialize in a large workspace (DIRS directories, default 30 000) against
// a small one (10 files), and how many inotify watches each serve holds
// once it has answered. Every round starts one serve on each workspace, in
// turn, so both see the same minutes of a shared machine. See
// docs/benchmarks.md ("Workspace size").
//
//	go run ./bench/watch -smith /tmp/smith-bench/smith -rounds 15
//
// The time is from starting the process to reading initialize's answer
// (whole process: start-up, settings, the engine, the watcher). Watches are
// counted from /proc/PID/fdinfo, the kernel's own list.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	smith := flag.String("smith", "smith", "the smith binary")
	rounds := flag.Int("rounds", 15, "serves started on each workspace")
	dirs := flag.Int("dirs", 30000, "directories in the large workspace")
	keep := flag.String("dir", "", "where to build the workspaces (default: a new temporary folder, removed at the end)")
	flag.Parse()
	base := *keep
	if base == "" {
		d, err := os.MkdirTemp("", "smith-watch-bench")
		check(err)
		defer os.RemoveAll(d)
		base = d
	}
	large, small := filepath.Join(base, "large"), filepath.Join(base, "small")
	check(tree(large, *dirs))
	check(tree(small, 0))
	state := filepath.Join(base, "state")
	type result struct {
		name    string
		times   []time.Duration
		watches []int
	}
	res := []*result{{name: fmt.Sprintf("%d directories", *dirs)}, {name: "10 files"}}
	roots := []string{large, small}
	fmt.Printf("load before: %s\n", loadavg())
	for r := range *rounds {
		for i := range roots {
			k := (i + r) % 2
			d, n, err := initialize(*smith, roots[k], state)
			check(err)
			res[k].times = append(res[k].times, d)
			res[k].watches = append(res[k].watches, n)
		}
	}
	fmt.Printf("load after:  %s\n%d rounds\n\n", loadavg(), *rounds)
	fmt.Println("| workspace | initialize answered after, median ms | min–max ms | inotify watches |")
	fmt.Println("|---|--:|--:|--:|")
	for _, x := range res {
		fmt.Printf("| %s | %.1f | %.1f–%.1f | %d–%d |\n", x.name, ms(median(x.times)), ms(slices.Min(x.times)), ms(slices.Max(x.times)), slices.Min(x.watches), slices.Max(x.watches))
	}
	fmt.Printf("\nratio large / small: %.2fx (target <= 1.2x, <= 100 watches)\n", float64(median(res[0].times))/float64(median(res[1].times)))
}

// tree builds a workspace: 10 Go files, and n directories below (100 per
// level-one directory, each with a file), the shape of a big monorepo.
func tree(root string, n int) error {
	for i := range 10 {
		p := filepath.Join(root, fmt.Sprintf("f%d.go", i))
		if err := os.MkdirAll(root, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("package main\n"), 0o644); err != nil {
			return err
		}
	}
	for i := range n {
		d := filepath.Join(root, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("sub%02d", i%100))
		if _, err := os.Stat(d); err == nil {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "x.go"), []byte("package x\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// initialize starts smith serve on root, sends initialize, and returns when
// the answer came, with the process's inotify watches at that moment.
func initialize(smith, root, state string) (time.Duration, int, error) {
	cmd := exec.Command(smith, "serve", "--workspace", root)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "SMITH_UPSTREAM=http://127.0.0.1:9")
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	params, _ := json.Marshal(map[string]any{
		"processId": os.Getpid(), "rootUri": (&url.URL{Scheme: "file", Path: root}).String(), "capabilities": map[string]any{},
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":` + string(params) + `}`
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	if _, err := fmt.Fprintf(in, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		return 0, 0, err
	}
	br := bufio.NewReader(out)
	n := -1
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return 0, 0, fmt.Errorf("reading initialize's answer: %v; stderr: %s", err, stderr.String())
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(br, msg); err != nil {
		return 0, 0, err
	}
	d := time.Since(start)
	if !strings.Contains(string(msg), `"id":1`) || strings.Contains(string(msg), `"error"`) {
		return 0, 0, fmt.Errorf("initialize failed: %s; stderr: %s", msg, stderr.String())
	}
	return d, watches(cmd.Process.Pid), nil
}

// watches counts the inotify watches a process holds.
func watches(pid int) int {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	n := 0
	for _, f := range fds {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n += strings.Count(string(b), "inotify wd:")
	}
	return n
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "watch:", err)
		os.Exit(1)
	}
}
