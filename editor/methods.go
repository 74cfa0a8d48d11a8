package editor

import "strings"

// Method names of the LSP subset smith speaks.
const (
	MethodInitialize       = "initialize"
	MethodInitialized      = "initialized"
	MethodShutdown         = "shutdown"
	MethodExit             = "exit"
	MethodCancelRequest    = "$/cancelRequest"
	MethodProgress         = "$/progress"
	MethodSetTrace         = "$/setTrace"
	MethodDidOpen          = "textDocument/didOpen"
	MethodDidChange        = "textDocument/didChange"
	MethodDidSave          = "textDocument/didSave"
	MethodDidClose         = "textDocument/didClose"
	MethodExecuteCommand   = "workspace/executeCommand"
	MethodApplyEdit        = "workspace/applyEdit"
	MethodProgressCreate   = "window/workDoneProgress/create"
	MethodProgressCancel   = "window/workDoneProgress/cancel"
	MethodDidChangeFolders = "workspace/didChangeWorkspaceFolders"
	MethodDidChangeConfig  = "workspace/didChangeConfiguration"
)

// smith's own methods (docs/protocol.md).
const (
	MethodChat              = "smith/chat"
	MethodDialogs           = "smith/dialogs"
	MethodDialogNew         = "smith/dialog/new"
	MethodDialogSelect      = "smith/dialog/select"
	MethodDialogRename      = "smith/dialog/rename"
	MethodDialogDelete      = "smith/dialog/delete"
	MethodHistory           = "smith/history"
	MethodChanges           = "smith/changes"
	MethodChangePreview     = "smith/change/preview"
	MethodChangeApply       = "smith/change/apply"
	MethodChangeReject      = "smith/change/reject"
	MethodUndo              = "smith/undo"
	MethodPatchApply        = "smith/patch/apply"
	MethodSession           = "smith/session"
	MethodCheckpoints       = "smith/checkpoints"
	MethodSessionApprove    = "smith/session/approve"
	MethodSessionReset      = "smith/session/reset"
	MethodCheckpointRestore = "smith/checkpoint/restore"
	MethodStatus            = "smith/status"

	// Server → client notifications.
	MethodEvent         = "smith/event"
	MethodChangeUpdated = "smith/changeUpdated"
	MethodFileChanged   = "smith/fileChanged"
)

// smithMethods are the requests that are also offered as
// workspace/executeCommand commands, so that a plain LSP client can use
// them without knowing smith's methods.
func smithMethods() []string {
	return []string{
		MethodChat, MethodDialogs, MethodDialogNew, MethodDialogSelect, MethodDialogRename,
		MethodDialogDelete, MethodHistory, MethodChanges, MethodChangePreview, MethodChangeApply,
		MethodChangeReject, MethodUndo, MethodPatchApply, MethodSession, MethodCheckpoints, MethodSessionApprove, MethodSessionReset,
		MethodCheckpointRestore, MethodStatus,
	}
}

// CommandFor names the workspace/executeCommand command of a smith method:
// "smith/change/apply" is "smith.change.apply".
func CommandFor(method string) string { return strings.ReplaceAll(method, "/", ".") }

// methodFor is the inverse of CommandFor ("" for a command that is not one).
func methodFor(command string) string {
	m := strings.ReplaceAll(command, ".", "/")
	for _, s := range smithMethods() {
		if s == m {
			return m
		}
	}
	return ""
}

// Commands lists every command smith announces in executeCommandProvider.
func Commands() []string {
	methods := smithMethods()
	out := make([]string, len(methods))
	for i, m := range methods {
		out[i] = CommandFor(m)
	}
	return out
}
