// Command abproc runs whole processes side by side: every round runs each
// command once, in turn (the order rotating from round to round), so that
// all of them see the same minutes of a shared machine. It prints, per
// command, the median and spread of its CPU time (user + system, from the
// kernel's accounting of the child: other load inflates it far less than
// wall time), its median wall time and its peak RSS, then each command's
// ratio to the first one.
//
//	abproc -rounds 20 -- smith=/tmp/smith replay --json v2.sse -- node=node reader.mjs v2.sse
//
// Each command is NAME=PROGRAM ARGS..., separated by a lone "--"; it runs
// directly (no shell), with standard output to /dev/null unless -stdout-dir
// names a folder for NAME.out. -setup runs a shell command before every run
// (outside the measurement), e.g. to restore files an apply changed; -dir
// is where the commands and the setup run.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

type command struct {
	name string
	argv []string
	cpu  []time.Duration
	wall []time.Duration
	rss  int64 // KiB, the largest seen
}

func main() {
	rounds := flag.Int("rounds", 10, "runs of each command")
	outDir := flag.String("stdout-dir", "", "keep each command's standard output as NAME.out in this folder")
	setup := flag.String("setup", "", "shell command run before every run, not measured")
	dir := flag.String("dir", "", "working directory of the commands and of -setup")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: abproc [flags] -- NAME=PROGRAM ARGS... [-- NAME=PROGRAM ARGS...]...")
		flag.PrintDefaults()
	}
	flag.Parse()
	cmds, err := parseCommands(flag.Args())
	if err != nil || len(cmds) == 0 {
		if err != nil {
			fmt.Fprintln(os.Stderr, "abproc:", err)
		}
		flag.Usage()
		os.Exit(2)
	}
	fmt.Printf("load before: %s\n", loadavg())
	for r := 0; r < *rounds; r++ {
		for i := range cmds {
			c := cmds[(i+r)%len(cmds)]
			if *setup != "" {
				sc := exec.Command("/bin/sh", "-c", *setup)
				sc.Dir = *dir
				if out, err := sc.CombinedOutput(); err != nil {
					fmt.Fprintf(os.Stderr, "abproc: setup: %v\n%s", err, out)
					os.Exit(1)
				}
			}
			if err := c.run(*dir, *outDir); err != nil {
				fmt.Fprintf(os.Stderr, "abproc: %s: %v\n", c.name, err)
				os.Exit(1)
			}
		}
	}
	fmt.Printf("load after:  %s\n", loadavg())
	fmt.Printf("%d rounds\n\n", *rounds)
	fmt.Println("| command | CPU ms median | CPU ms min–max | wall ms median | peak RSS MiB | ratio to " + cmds[0].name + " (CPU) | (wall) |")
	fmt.Println("|---|--:|--:|--:|--:|--:|--:|")
	base := cmds[0]
	for _, c := range cmds {
		fmt.Printf("| %s | %.2f | %.2f–%.2f | %.2f | %.1f | %.3f | %.3f |\n", c.name,
			ms(median(c.cpu)), ms(slices.Min(c.cpu)), ms(slices.Max(c.cpu)), ms(median(c.wall)), float64(c.rss)/1024,
			float64(median(c.cpu))/float64(median(base.cpu)), float64(median(c.wall))/float64(median(base.wall)))
	}
}

func parseCommands(args []string) ([]*command, error) {
	var cmds []*command
	var cur []string
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		name, prog, ok := strings.Cut(cur[0], "=")
		if !ok || name == "" || prog == "" {
			return fmt.Errorf("%q: want NAME=PROGRAM", cur[0])
		}
		cmds = append(cmds, &command{name: name, argv: append([]string{prog}, cur[1:]...)})
		cur = nil
		return nil
	}
	for _, a := range args {
		if a == "--" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		cur = append(cur, a)
	}
	return cmds, flush()
}

func (c *command) run(dir, outDir string) error {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	if outDir != "" {
		f, err := os.Create(filepath.Join(outDir, c.name+".out"))
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.Stdout = f
	}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return err
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	c.cpu = append(c.cpu, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
	c.wall = append(c.wall, wall)
	c.rss = max(c.rss, ru.Maxrss)
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}
