//go:build gcs

package main

import "github.com/spf13/cobra"

// gcsFirst: this build opens gs:// stores itself.
func gcsFirst(*cobra.Command, []string) error { return nil }
