// Command hellodeps is bench/startup.sh's second floor: the hello world of
// bench/startup/hello linked with every package smith links (imported for
// their side effects only), so that it pays their package initialization
// and does nothing else; the linker drops most of their code, which no one
// calls. The gap between it and hello is what their package inits cost;
// bench/startup/hellofloor and bench/startup.sh's linked binary add the code
// that is called.
package main

import (
	"os"

	_ "github.com/smith-dev/smith/acp"
	_ "github.com/smith-dev/smith/config"
	_ "github.com/smith-dev/smith/daemon"
	_ "github.com/smith-dev/smith/diffapply"
	_ "github.com/smith-dev/smith/editor"
	_ "github.com/smith-dev/smith/protocol"
	_ "github.com/smith-dev/smith/protocol/upstream"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/term"
)

func main() { os.Stdout.WriteString("hi\n") }
