//go:build !unix

package main

import (
	"errors"
	"net"
)

// listenUnix is not available: smith serve --listen needs Unix sockets.
func listenUnix(path string) (net.Listener, error) {
	return nil, errors.New("--listen unix:PATH needs a Unix system; use stdio")
}
