package main

import (
	"errors"
	"net"
	"os"
)

// This file holds what the commands' messages take out of Go's errors:
// the messages name the file or address themselves and say what to do, so
// the operation and path Go puts in front ("open x: ", "listen tcp ADDR:
// bind: ") are noise.

// pathErrText is err without the *os.PathError's operation and path
// ("open x: no such file or directory" is "no such file or directory"),
// for messages that name the file themselves.
func pathErrText(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// listenCause is why a listen failed ("address already in use"), without
// Go's "listen tcp ADDR: bind:" wording; ok is false when err is not the
// failure of a listen.
func listenCause(err error) (why error, ok bool) {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "listen" {
		return nil, false
	}
	why = oe.Err
	if se := (*os.SyscallError)(nil); errors.As(why, &se) {
		why = se.Err
	}
	return why, true
}
