//go:build !floor_only || floor_http

package main

import (
	"net/http"
	"os"

	"github.com/tmaxmax/go-sse"
)

func init() { uses = append(uses, useHTTP) }

// useHTTP reads an SSE stream from an http(s) URL, as smith's chat client.
func useHTTP() {
	resp, err := http.Get(os.Args[1])
	if err != nil {
		return
	}
	defer resp.Body.Close()
	for ev, err := range sse.Read(resp.Body, nil) {
		if err != nil {
			break
		}
		os.Stdout.WriteString(ev.Data)
	}
}
