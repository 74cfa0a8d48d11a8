package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/config"
)

type configOptions struct {
	settings settingsFlags
	json     bool
}

func newConfigCmd(s *IOStreams) *cobra.Command {
	o := &configOptions{}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and where each value came from",
		Long: `Print every setting smith uses in this workspace, its value, and the layer it came from.

Layers, highest first: command-line flags, SMITH_* environment variables, the
workspace's .smith.toml, the user's config file ($XDG_CONFIG_HOME/smith/config.toml),
discovery of a running AgentSmithy server (.agentsmithy/status.json), built-in
defaults. Tokens are never printed.`,
		Example: `  smith config
  SMITH_DIALECT=rag smith config --json
  smith config --upstream http://127.0.0.1:9000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			set, err := o.settings.load(cmd, s)
			if err != nil {
				return err
			}
			return runConfig(s, o, set)
		},
	}
	o.settings.register(cmd)
	cmd.Flags().BoolVar(&o.json, "json", false, "print a JSON object instead of a table")
	return cmd
}

func runConfig(s *IOStreams, o *configOptions, set *config.Settings) error {
	if o.json {
		type entry struct {
			Key    string `json:"key"`
			Value  string `json:"value"`
			Source string `json:"source"`
			Origin string `json:"origin,omitempty"`
		}
		out := struct {
			Workspace string  `json:"workspace"`
			Settings  []entry `json:"settings"`
		}{Workspace: set.Workspace}
		for _, v := range set.Values() {
			out.Settings = append(out.Settings, entry{v.Key.Name, v.Display(), string(v.Source), v.Origin})
		}
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(s.Out, "workspace  %s\n\n", set.Workspace)
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, v := range set.Values() {
		src := string(v.Source)
		if v.Origin != "" {
			src += " (" + v.Origin + ")"
		}
		val := v.Display()
		if val == "" {
			val = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Key.Name, val, src)
	}
	return tw.Flush()
}
