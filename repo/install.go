package repo

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

const hookMarker = "# chunkvc pre-push hook"

// postMergeMarker marks the post-merge hook chunkvc install writes.
const postMergeMarker = "# chunkvc post-merge hook"

// Install writes .git/hooks/pre-push so that `git push` runs
// `chunkvc pre-push` first (a foreign hook is kept as pre-push.local and
// run before ours), and sets up the manifest diff driver: a line in
// .gitattributes (staged) and diff.chunkvc.textconv in .git/config, so
// `git diff` and `git log -p` show readable chunk listings, and the
// manifest merge driver (MergeAttribute, merge.chunkvc.driver), so that
// `git merge` merges data files chunk by chunk. A post-merge hook then
// runs `chunkvc checkout`: Git calls the driver only for manifests both
// sides changed, and a file only their side changed must be written too.
// Installing twice changes nothing.
func (r *Repo) Install() (string, error) {
	if err := r.installTextconv(); err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "chunkvc"
	}
	hook, err := r.installHook("pre-push", hookMarker, `input=$(cat)
if [ -x "$(dirname "$0")/pre-push.local" ]; then
  printf '%s\n' "$input" | "$(dirname "$0")/pre-push.local" "$@"
fi
chunkvc=$(command -v chunkvc || echo '`+exe+`')
printf '%s\n' "$input" | "$chunkvc" pre-push "$@"
`)
	if err != nil {
		return "", err
	}
	return hook, r.installPostMerge(exe)
}

// installPostMerge writes the post-merge hook that checks out what a
// merge changed.
func (r *Repo) installPostMerge(exe string) error {
	_, err := r.installHook("post-merge", postMergeMarker, `if [ -x "$(dirname "$0")/post-merge.local" ]; then
  "$(dirname "$0")/post-merge.local" "$@"
fi
chunkvc=$(command -v chunkvc || echo '`+exe+`')
"$chunkvc" -q checkout
`)
	return err
}

// installHook writes .git/hooks/<name> with body after a line holding
// marker; a hook without marker is kept as <name>.local, which body runs.
func (r *Repo) installHook(name, marker, body string) (string, error) {
	dir := filepath.Join(r.gitDir(), "hooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	hook := filepath.Join(dir, name)
	old, err := os.ReadFile(hook)
	switch {
	case err == nil && strings.Contains(string(old), marker):
	case err == nil:
		if err := os.Rename(hook, hook+".local"); err != nil {
			return "", err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	script := "#!/bin/sh\n" + marker + " (chunkvc install); a previous hook is kept as " + name + ".local.\nset -e\n" + body
	hooks := confine.New(dir, ".git/hooks") // git's, wherever it is linked to
	defer hooks.Close()
	f, err := hooks.Create(name)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(script)
	if err == nil {
		err = f.Chmod(0o755) // the temp file's own mode: nothing followed
	}
	if err != nil {
		f.Abort()
		return "", err
	}
	return hook, f.Commit(true)
}

func (r *Repo) installTextconv() error {
	wt := r.workTree()
	defer wt.Close()
	// Never read through a link: what it points at would be staged.
	old, err := wt.ReadFile(".gitattributes", maxTextFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	text := string(old)
	changed := false
	for _, line := range []string{TextconvAttribute, MergeAttribute} {
		if hasLine(text, line) {
			continue
		}
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += line + "\n"
		changed = true
	}
	if changed {
		if err := wt.WriteFile(".gitattributes", []byte(text), true); err != nil {
			return err
		}
	}
	if err := r.git.Stage(map[string][]byte{".gitattributes": []byte(text)}, nil); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "chunkvc"
	}
	// git writes its config through config.lock, never in place.
	if _, err := r.git.CLI().Run(context.Background(), "config", "--local", TextconvConfigKey, exe+" diff-textconv"); err != nil {
		return err
	}
	return r.setMergeDriver(context.Background(), exe)
}

// setMergeDriver names chunkvc's merge driver in .git/config.
func (r *Repo) setMergeDriver(ctx context.Context, exe string) error {
	for _, kv := range [][2]string{
		{MergeDriverKey, exe + " merge-driver %O %A %B %P"},
		{MergeDriverNameKy, "chunkvc three-way merge of data files"},
	} {
		if _, err := r.git.CLI().Run(ctx, "config", "--local", kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// hasLine reports whether text has line as one of its lines.
func hasLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}
