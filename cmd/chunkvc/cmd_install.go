package main

import (
	"github.com/spf13/cobra"
)

func newInstallCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "install",
		Short: "Install the Git pre-push hook (and diff driver) in this repository",
		Long: `Install a pre-push hook so that a plain git push first makes sure the store
holds every chunk of the commits being pushed (uploading and verifying
chunks of offline commits), and stops the push if it cannot. An existing
pre-push hook is kept and called first.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			hook, err := r.Install()
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(map[string]string{"pre_push_hook": hook})
			}
			g.say("installed %s\n", hook)
			return nil
		},
	}
	addJSON(c, g)
	return c
}
