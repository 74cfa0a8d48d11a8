package daemon

import "errors"

// TEMPORARY until diffapply's planner lands.

type filePlan struct {
	hunks  []Hunk
	noop   bool
	render func(ids []string) ([]byte, bool, error)
}

func planChange(c *changeRecord, text []byte, exists bool) (*filePlan, error) {
	return nil, errors.New("diffapply not landed")
}

func verifyPostImage(c *changeRecord, disk []byte) ([]Hunk, error) {
	return nil, errors.New("diffapply not landed")
}

func reverseHunks(c *changeRecord, cur []byte, ids []string) ([]byte, bool, error) {
	return nil, false, errors.New("diffapply not landed")
}

func unifiedDiff(path string, a, b []byte) string { return "" }

func (e *Engine) commitDisk(abs string, old []byte, oldExists bool, next []byte, nextExists bool) error {
	return errors.New("diffapply not landed")
}
