package lockfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

// ErrLocked means another chunkvc process holds the repository lock.
var ErrLocked = errors.New("repository is locked by another chunkvc process")

// Acquire takes the lock file rel of the tree open returns (name is how
// errors show it) and returns the function that releases it. A lock left
// by a dead process on this host is taken over; one held by a live
// process (or another host) is waited for until wait has passed, then an
// error wrapping ErrLocked naming the holder.
func Acquire(open func() *confine.Tree, rel, name string, wait time.Duration) (release func(), err error) {
	t := open()
	defer t.Close()
	host, _ := os.Hostname()
	me := fmt.Sprintf("%d %s %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	deadline := time.Now().Add(wait)
	for attempt := 0; ; attempt++ {
		err := createWith(t, rel, me)
		if err == nil {
			return func() {
				t := open()
				defer t.Close()
				_ = t.Remove(rel)
			}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		data, _ := t.ReadFile(rel, 4096)
		if fi, err := t.Lstat(rel); err == nil && len(data) == 0 && time.Since(fi.ModTime()) > 10*time.Second {
			// Empty: left by a chunkvc killed between making the file and
			// writing it (before locks were made whole, by link).
			_ = t.Remove(rel)
			continue
		}
		f2 := strings.Fields(string(data))
		if len(f2) >= 2 && f2[1] == host {
			if pid, perr := strconv.Atoi(f2[0]); perr == nil && !processAlive(pid) {
				_ = t.Remove(rel) // stale: its process is gone
				continue
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (%s: %s); if no chunkvc is running, remove that file", ErrLocked, name, strings.TrimSpace(string(data)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createWith creates the file rel of t holding content, failing with an
// error that is fs.ErrExist if it exists. The content is written to a temp
// file first and linked to rel: a process killed midway leaves no empty
// lock, whose holder no one could tell. Where links are refused, the file
// is created exclusively and then written.
func createWith(t *confine.Tree, rel, content string) error {
	f, err := t.Create(rel)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Abort()
		return fmt.Errorf("write lock %s: %w", t.Show(rel), err)
	}
	err = f.Link()
	if err == nil || errors.Is(err, fs.ErrExist) || errors.Is(err, confine.ErrUnsafePath) {
		return err
	}
	g, err := t.CreateExcl(rel)
	if err != nil {
		return err
	}
	_, werr := g.WriteString(content)
	if cerr := g.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = t.Remove(rel)
		return fmt.Errorf("write lock %s: %w", t.Show(rel), werr)
	}
	return nil
}

// processAlive reports whether process pid of this host still runs.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
