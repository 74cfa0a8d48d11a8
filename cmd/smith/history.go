package main

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/protocol"
)

func newHistoryCmd(s *IOStreams) *cobra.Command {
	var f settingsFlags
	var dialog string
	var limit, before int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show a dialog's history",
		Long:  "Print the messages of a dialog (the current one unless -d is given), oldest first. Older pages: --before with the first index shown.",
		Example: `  smith history
  smith history -d 5b1f0c2e8d7a4e3f9a1b2c3d4e5f6a7b --limit 50
  smith history --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Said before the upstream is asked: a page of 0 or fewer
			// messages was taken for the server's default, silently.
			if limit < 1 {
				return usageErrorf("--limit %d: give the number of messages per page, 1 or more", limit)
			}
			if before < -1 || before == -1 && cmd.Flags().Changed("before") {
				return usageErrorf("--before %d: give a message index, 0 or more (smith history prints the one to use when there are older messages)", before)
			}
			return withEngine(cmd, s, &f, func(ctx context.Context, b backend) error {
				id := dialog
				if id == "" {
					st, err := b.Status(ctx)
					if err != nil {
						return err
					}
					id = st.CurrentDialog
					if id == "" && !st.Reachable {
						// The upstream would know it: say why it cannot be asked.
						why := st.Error
						if !strings.Contains(why, "--upstream") { // else it says what to do already
							why += " (" + unreachableAdvice + ")"
						}
						return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("no current dialog to show: the upstream %s cannot be asked for one: %s", st.Upstream, why)}
					}
					if id == "" {
						return fmt.Errorf("no current dialog yet: send a message with smith chat, or pass -d ID (smith dialogs lists them)")
					}
				}
				page, err := b.History(ctx, id, limit, before)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(s, page)
				}
				if len(page.Events) == 0 && !page.HasMore {
					fmt.Fprintf(s.Err, "dialog %s has no messages yet: smith chat -d %s MESSAGE sends one\n", id, id)
					return nil
				}
				return printHistory(s, page)
			})
		},
	}
	f.registerNoTurn(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&dialog, "dialog", "d", "", "dialog id (default: the current dialog)")
	fl.IntVar(&limit, "limit", 20, "messages per page")
	fl.IntVar(&before, "before", -1, "show the page before this message index (smith history prints it when there are older messages)")
	fl.Lookup("before").DefValue = "0" // -1 means "the latest page"; keep pflag from printing it
	fl.BoolVar(&asJSON, "json", false, "print the raw page as JSON")
	return cmd
}

// printHistory renders a history page for a person: each message followed
// by one blank line, the tool calls and edits after it as a block of their
// own. A message's text is printed without the blank lines it starts or
// ends with: the agent's text before a tool call ends with its own blank
// line, and with ours it was three.
func printHistory(s *IOStreams, p *protocol.HistoryPage) error {
	color := s.ColorOut()
	tools := false // the last line printed was a tool line
	message := func(label, ansi, text string) {
		text = strings.TrimRightFunc(strings.TrimLeft(text, "\r\n"), unicode.IsSpace)
		if text == "" {
			return // an empty message is nothing to show
		}
		if tools {
			fmt.Fprintln(s.Out)
			tools = false
		}
		if label != "" {
			fmt.Fprintf(s.Out, "%s %s\n\n", style(color, ansiBold, label), text)
			return
		}
		fmt.Fprintf(s.Out, "%s\n\n", style(color, ansi, text))
	}
	for _, e := range p.Events {
		switch e.Type {
		case "user":
			message("you:", "", e.Content)
		case "chat":
			message("agent:", "", e.Content)
		case "reasoning":
			message("", ansiDim, e.Content)
		case "tool_call":
			fmt.Fprintf(s.Out, "  ⚙ %s %s\n", e.Name, string(e.Args))
			tools = true
		case "file_edit":
			fmt.Fprintf(s.Out, "  ✎ %s\n", e.File)
			tools = true
		}
	}
	if p.HasMore {
		fmt.Fprintf(s.Err, "older messages: smith history --before %d\n", p.FirstIdx)
	}
	return nil
}
