package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/mem"
)

// mutants maps a way of breaking a store to the subtest of Run that must
// catch it. "none" is the unbroken control, which must pass.
var mutants = map[string]string{
	"none":                  "",
	"string-empty":          "RoundTrip",
	"put-drops-empty":       "RoundTrip",
	"put-truncates-large":   "RoundTrip",
	"put-keeps-buffer":      "RoundTrip",
	"stat-size-off-by-one":  "RoundTrip",
	"get-ignores-offset":    "Ranges",
	"get-ignores-length":    "Ranges",
	"get-clamps-range":      "Ranges",
	"get-range-not-found":   "Ranges",
	"get-allows-negative":   "Ranges",
	"not-found-unwrapped":   "Missing",
	"not-found-unnamed":     "Missing",
	"put-fails-if-present":  "Idempotent",
	"put-not-atomic":        "Concurrent",
	"list-skips-one":        "List",
	"list-twice":            "List",
	"list-ignores-fn-error": "List",
	"delete-noop":           "Delete",
	"delete-missing-errors": "Delete",
	"delete-all":            "Delete",
	"put-rekeys":            "ReadAllVerifies",
	"confirm-always-ok":     "VerifyMany",

	"batch-drops-one":           "BatchRoundTrip",
	"batch-keeps-buffer":        "BatchRoundTrip",
	"batch-abort-commits":       "BatchAbort",
	"batch-dup-fails":           "BatchDuplicates",
	"batch-added-always":        "BatchDuplicates",
	"batch-commit-drops-late":   "BatchConcurrent",
	"batch-like-replaces":       "BatchDelta",
	"deletemany-drops-deps":     "BatchDeleteMany",
	"deletemany-missing-errors": "BatchDeleteMany",
	"deletemany-skips-last":     "BatchDeleteMany",

	"named-put-keeps-old":   "Registry",
	"named-list-unsorted":   "Registry",
	"named-delete-errors":   "Registry",
	"sweep-deletes-objects": "SweepKeepsObjects",
	"sweep-dry-run-differs": "SweepAbandonedBatch",
	"sweep-ignores-cutoff":  "SweepSparesYoung",

	"connections-zero":       "Connections",
	"hasmany-all-present":    "HasMany",
	"hasmany-ignores-errors": "HasMany",
	"touch-missing-ok":       "Touch",
	"repack-drops-one":       "Repack",
}

const mutantEnv = "STORETEST_MUTANT"

// TestSuiteCatchesMutants runs the suite on broken stores, each in a child
// process, and checks that the expected subtest fails.
func TestSuiteCatchesMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	for mode, sub := range mutants {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			run := "^TestMutant$"
			if sub != "" {
				run += "/^" + sub + "$"
			}
			cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1")
			cmd.Env = append(os.Environ(), mutantEnv+"="+mode)
			out, err := cmd.CombinedOutput()
			switch {
			case sub == "" && err != nil:
				t.Fatalf("the unbroken store fails the suite: %v\n%s", err, out)
			case sub != "" && err == nil:
				t.Fatalf("the suite passes a store with %s", mode)
			case sub != "" && !bytes.Contains(out, []byte("--- FAIL: TestMutant/"+sub+" ")):
				t.Fatalf("%s was not caught by %s:\n%s", mode, sub, out)
			}
		})
	}
}

// TestMutant is the child of TestSuiteCatchesMutants.
func TestMutant(t *testing.T) {
	mode := os.Getenv(mutantEnv)
	if mode == "" {
		t.Skip("run by TestSuiteCatchesMutants")
	}
	listWait = 300 * time.Millisecond
	open := func(*testing.T) store.Store { return &mutant{Store: mem.New(), mode: mode} }
	Run(t, open)
	RunBatch(t, open, nil)
}

type mutant struct {
	*mem.Store
	mode string
	mu   sync.Mutex
	kept map[hashing.ID][]byte // for put-keeps-buffer
	deps map[hashing.ID][]hashing.ID
	live []*mutantBatch // every batch started, for sweep-ignores-cutoff
}

// Confirm makes every mutant a store.Confirmer, correct but for
// confirm-always-ok.
func (m *mutant) Confirm(ctx context.Context, want []store.Sized) error {
	if m.mode == "confirm-always-ok" {
		return nil
	}
	for _, w := range want {
		if err := store.Verify(ctx, m, w.ID, w.Size, false); err != nil {
			return err
		}
	}
	return nil
}

func (m *mutant) String() string {
	if m.mode == "string-empty" {
		return ""
	}
	return m.Store.String()
}

func (m *mutant) Put(ctx context.Context, id hashing.ID, data []byte) error {
	switch m.mode {
	case "put-drops-empty":
		if len(data) == 0 {
			return nil
		}
	case "put-truncates-large":
		data = data[:min(len(data), 4<<20)]
	case "put-keeps-buffer":
		m.mu.Lock()
		if m.kept == nil {
			m.kept = map[hashing.ID][]byte{}
		}
		m.kept[id] = data
		m.mu.Unlock()
	case "put-rekeys":
		id = hashing.Sum(data)
	case "put-fails-if-present":
		if _, err := m.Store.Stat(ctx, id); err == nil {
			return errors.New("already there")
		}
	case "put-not-atomic":
		m.Store.Delete(ctx, id)
		if err := m.Store.Put(ctx, id, data[:len(data)/2]); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
		m.Store.Delete(ctx, id)
	}
	return m.Store.Put(ctx, id, data)
}

func (m *mutant) Get(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	info, err := m.Store.Stat(ctx, id)
	m.mu.Lock()
	kept := m.kept[id]
	m.mu.Unlock()
	switch {
	case kept != nil && err == nil && off == 0 && length < 0:
		return io.NopCloser(bytes.NewReader(kept)), nil
	case m.mode == "get-ignores-offset":
		off = 0
	case m.mode == "get-ignores-length":
		length = -1
	case m.mode == "get-clamps-range" && err == nil:
		off = min(off, info.Size)
		if length > info.Size-off {
			length = info.Size - off
		}
	case m.mode == "get-allows-negative" && off < 0:
		off = 0
	}
	rc, err := m.Store.Get(ctx, id, off, length)
	if m.mode == "get-range-not-found" && err != nil {
		err = store.ErrNotFound
	}
	return rc, m.mangle(err)
}

func (m *mutant) Stat(ctx context.Context, id hashing.ID) (store.Info, error) {
	info, err := m.Store.Stat(ctx, id)
	if m.mode == "stat-size-off-by-one" && err == nil {
		info.Size++
	}
	return info, m.mangle(err)
}

// mangle breaks not-found errors for the not-found-* modes.
func (m *mutant) mangle(err error) error {
	switch {
	case m.mode == "not-found-unwrapped" && errors.Is(err, store.ErrNotFound):
		return errors.New(strings.ReplaceAll(err.Error(), "not found", "missing"))
	case m.mode == "not-found-unnamed" && errors.Is(err, store.ErrNotFound):
		return store.ErrNotFound
	}
	return err
}

func (m *mutant) List(ctx context.Context, fn func(store.Info) error) error {
	n := 0
	return m.Store.List(ctx, func(info store.Info) error {
		n++
		switch {
		case m.mode == "list-skips-one" && n == 3:
			return nil
		case m.mode == "list-twice" && n == 2:
			if err := fn(info); err != nil {
				return err
			}
		case m.mode == "list-ignores-fn-error":
			fn(info)
			return nil
		}
		return fn(info)
	})
}

func (m *mutant) Delete(ctx context.Context, id hashing.ID) error {
	switch m.mode {
	case "delete-noop":
		return nil
	case "delete-missing-errors":
		if _, err := m.Store.Stat(ctx, id); err != nil {
			return err
		}
	case "delete-all":
		var all []hashing.ID
		m.Store.List(ctx, func(i store.Info) error { all = append(all, i.ID); return nil })
		for _, id := range all {
			m.Store.Delete(ctx, id)
		}
	}
	return m.Store.Delete(ctx, id)
}

// Batch returns a batch that keeps objects in memory until Commit.
func (m *mutant) Batch(context.Context) (store.Batch, error) {
	b := &mutantBatch{m: m, objs: map[hashing.ID][]byte{}}
	m.mu.Lock()
	m.live = append(m.live, b)
	m.mu.Unlock()
	return b, nil
}

// Sweep finds no debris (a batch keeps its objects in memory), but for the
// sweep mutants.
func (m *mutant) Sweep(ctx context.Context, cutoff time.Time, dryRun bool) (store.Debris, error) {
	switch m.mode {
	case "sweep-deletes-objects":
		var ids []hashing.ID
		m.Store.List(ctx, func(i store.Info) error { ids = append(ids, i.ID); return nil })
		for _, id := range ids {
			m.Store.Delete(ctx, id)
		}
	case "sweep-dry-run-differs":
		if dryRun {
			return store.Debris{Files: 1, Bytes: 1}, nil
		}
	case "sweep-ignores-cutoff":
		m.mu.Lock()
		for _, b := range m.live {
			b.mu.Lock()
			b.order, b.objs = nil, map[hashing.ID][]byte{}
			b.mu.Unlock()
		}
		m.mu.Unlock()
	}
	return store.Debris{}, nil
}

func (m *mutant) PutNamed(ctx context.Context, name string, data []byte) error {
	if m.mode == "named-put-keeps-old" {
		if _, err := m.Store.GetNamed(ctx, name); err == nil {
			return nil
		}
	}
	return m.Store.PutNamed(ctx, name, data)
}

func (m *mutant) ListNamed(ctx context.Context, prefix string, fn func(string) error) error {
	if m.mode != "named-list-unsorted" {
		return m.Store.ListNamed(ctx, prefix, fn)
	}
	var names []string
	m.Store.ListNamed(ctx, prefix, func(n string) error { names = append(names, n); return nil })
	for i := len(names) - 1; i >= 0; i-- {
		if err := fn(names[i]); err != nil {
			return err
		}
	}
	return nil
}

func (m *mutant) DeleteNamed(ctx context.Context, name string) error {
	if m.mode == "named-delete-errors" {
		if _, err := m.Store.GetNamed(ctx, name); err != nil {
			return err
		}
	}
	return m.Store.DeleteNamed(ctx, name)
}

type mutantBatch struct {
	m     *mutant
	mu    sync.Mutex
	order []hashing.ID
	objs  map[hashing.ID][]byte
}

func (b *mutantBatch) Put(ctx context.Context, id hashing.ID, data []byte, like hashing.ID) (bool, error) {
	if b.m.mode == "batch-dup-fails" {
		if _, err := b.m.Store.Stat(ctx, id); err == nil {
			return false, errors.New("already there")
		}
	}
	_, held := b.m.Store.Stat(ctx, id)
	added := held != nil
	if b.m.mode != "batch-keeps-buffer" {
		data = bytes.Clone(data)
	}
	if b.m.mode == "batch-like-replaces" && !like.IsZero() {
		b.m.Store.Delete(ctx, like)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.objs[id]; !ok {
		b.order = append(b.order, id)
	} else {
		added = false
	}
	if b.m.mode == "batch-added-always" {
		added = true
	}
	b.objs[id] = data
	if !like.IsZero() {
		b.m.mu.Lock()
		if b.m.deps == nil {
			b.m.deps = map[hashing.ID][]hashing.ID{}
		}
		b.m.deps[like] = append(b.m.deps[like], id)
		b.m.mu.Unlock()
	}
	return added, nil
}

func (b *mutantBatch) Commit(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	order := b.order
	switch {
	case b.m.mode == "batch-drops-one" && len(order) > 3:
		order = order[1:]
	case b.m.mode == "batch-commit-drops-late" && len(order) > 100:
		order = order[:100]
	}
	for _, id := range order {
		if err := b.m.Store.Put(ctx, id, b.objs[id]); err != nil {
			return err
		}
	}
	return nil
}

func (b *mutantBatch) Abort() error {
	if b.m.mode == "batch-abort-commits" {
		return b.Commit(context.Background())
	}
	return nil
}

// DeleteMany deletes ids one by one.
func (m *mutant) DeleteMany(ctx context.Context, ids []hashing.ID) error {
	if m.mode == "deletemany-skips-last" && len(ids) > 1 {
		ids = ids[:len(ids)-1]
	}
	for _, id := range ids {
		if m.mode == "deletemany-missing-errors" {
			if _, err := m.Store.Stat(ctx, id); err != nil {
				return err
			}
		}
		if m.mode == "deletemany-drops-deps" {
			m.mu.Lock()
			deps := m.deps[id]
			m.mu.Unlock()
			for _, d := range deps {
				m.Store.Delete(ctx, d)
			}
		}
		if err := m.Store.Delete(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Connections makes every mutant a store.Connectioner.
func (m *mutant) Connections() int {
	if m.mode == "connections-zero" {
		return 0
	}
	return 4
}

// HasMany makes every mutant a store.BatchStater.
func (m *mutant) HasMany(ctx context.Context, ids []hashing.ID) (map[hashing.ID]bool, error) {
	out := map[hashing.ID]bool{}
	for _, id := range ids {
		ok, err := store.Has(ctx, m, id)
		switch {
		case m.mode == "hasmany-all-present":
			ok = true
		case m.mode == "hasmany-ignores-errors" && err != nil:
			ok, err = false, nil
		}
		if err != nil {
			return nil, err
		}
		out[id] = ok
	}
	return out, nil
}

// Touch makes every mutant a store.Toucher (of a store without ages).
func (m *mutant) Touch(ctx context.Context, id hashing.ID) error {
	_, err := m.Stat(ctx, id)
	if m.mode == "touch-missing-ok" {
		return nil
	}
	return err
}

// Repack makes every mutant a store.Repacker with nothing to merge.
func (m *mutant) Repack(ctx context.Context) (int, error) {
	if m.mode == "repack-drops-one" {
		var last hashing.ID
		m.Store.List(ctx, func(i store.Info) error { last = i.ID; return nil })
		m.Store.Delete(ctx, last)
	}
	return 0, nil
}
