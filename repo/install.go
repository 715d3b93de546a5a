package repo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const hookMarker = "# chunkvc pre-push hook"

// Install writes .git/hooks/pre-push so that `git push` runs
// `chunkvc pre-push` first. A foreign hook is kept as pre-push.local and
// run before ours. Installing twice changes nothing.
func (r *Repo) Install() (string, error) {
	dir := filepath.Join(r.gitDir(), "hooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	hook := filepath.Join(dir, "pre-push")
	old, err := os.ReadFile(hook)
	switch {
	case err == nil && strings.Contains(string(old), hookMarker):
	case err == nil:
		if err := os.Rename(hook, hook+".local"); err != nil {
			return "", err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "chunkvc"
	}
	script := `#!/bin/sh
` + hookMarker + ` (chunkvc install); a previous hook is kept as pre-push.local.
set -e
input=$(cat)
if [ -x "$(dirname "$0")/pre-push.local" ]; then
  printf '%s\n' "$input" | "$(dirname "$0")/pre-push.local" "$@"
fi
chunkvc=$(command -v chunkvc || echo '` + exe + `')
printf '%s\n' "$input" | "$chunkvc" pre-push "$@"
`
	return hook, writeFileAtomicMode(hook, []byte(script), 0o755)
}

func writeFileAtomicMode(name string, data []byte, mode os.FileMode) error {
	if err := writeFileAtomic(name, data); err != nil {
		return err
	}
	return os.Chmod(name, mode)
}
