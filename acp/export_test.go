package acp

// History is history, for the tests of package acp_test.
var History = history
