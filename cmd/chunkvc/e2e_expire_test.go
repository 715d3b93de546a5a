package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
	"github.com/chunkvc/chunkvc/internal/miniotest"
	"github.com/chunkvc/chunkvc/store"
)

// lake is a partitioned GeoParquet lake committed night by night, with
// the bytes of every partition at every commit.
type lake struct {
	r          *runner
	parts      int
	commits    []string            // oldest first
	files      []map[string][]byte // per commit: path -> bytes
	dates      []time.Time
	partChange int // partitions a night rewrites
}

func partPath(p int) string { return fmt.Sprintf("lake/cell=%02d/part-0.parquet", p) }

// partition is partition p as night n left it: the base rows of seed p,
// with the first n rows of row group n%4 edited (n = 0: none).
func partition(t *testing.T, p, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := pqgen.Write(&b, pqgen.Config{Rows: 2000, RowGroups: 4, Seed: int64(p + 1), EditRows: n, EditRG: n % 4}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// buildLake commits the lake's first night, then nights diffs, each
// rewriting partChange partitions; commit n is dated (nights - n) days
// and one hour before now, with GIT_AUTHOR_DATE and GIT_COMMITTER_DATE.
func buildLake(t *testing.T, r *runner, parts, nights, partChange int) *lake {
	t.Helper()
	l := &lake{r: r, parts: parts, partChange: partChange}
	cur := map[string][]byte{}
	base := r.env
	now := time.Now()
	for n := 0; n <= nights; n++ {
		if n == 0 {
			for p := range parts {
				cur[partPath(p)] = partition(t, p, 0)
				r.write(partPath(p), cur[partPath(p)])
			}
		} else {
			for k := range partChange {
				p := (n*7 + k*13) % parts
				cur[partPath(p)] = partition(t, p, n)
				r.write(partPath(p), cur[partPath(p)])
			}
		}
		when := now.Add(-time.Duration(nights-n)*24*time.Hour - time.Hour).UTC().Format(time.RFC3339)
		r.env = append(append([]string{}, base...), "GIT_AUTHOR_DATE="+when, "GIT_COMMITTER_DATE="+when)
		var c commitResult
		r.jsonOf(&c, "commit", "-m", fmt.Sprintf("night %d", n))
		r.env = base
		snap := map[string][]byte{}
		for p, b := range cur {
			snap[p] = b
		}
		l.commits = append(l.commits, c.Commit)
		l.files = append(l.files, snap)
		d, _ := time.Parse(time.RFC3339, when)
		l.dates = append(l.dates, d)
	}
	return l
}

// objectsOf returns, per commit, the ids of the objects (layouts and
// chunks) each file's manifest names, read from Git with git itself: the
// expectation owes nothing to chunkvc's gc.
func objectsOf(t *testing.T, r *runner, commits []string) []map[string][]string {
	t.Helper()
	blobsOf := make([]map[string]string, len(commits))
	var all []string
	seen := map[string]bool{}
	for i, c := range commits {
		blobsOf[i] = map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(r.git("ls-tree", "-r", c, "--", ".chunkvc/manifests")), "\n") {
			meta, p, ok := strings.Cut(line, "\t")
			f := strings.Fields(meta)
			if !ok || len(f) < 3 {
				continue
			}
			blobsOf[i][strings.TrimPrefix(p, ".chunkvc/manifests/")] = f[2]
			if !seen[f[2]] {
				seen[f[2]] = true
				all = append(all, f[2])
			}
		}
	}
	ids := catManifests(t, r, all)
	out := make([]map[string][]string, len(commits))
	for i, bs := range blobsOf {
		out[i] = map[string][]string{}
		for p, b := range bs {
			out[i][p] = ids[b]
		}
	}
	return out
}

// catManifests reads manifest blobs with git cat-file --batch and returns
// the object ids each names: its layout and its chunk lines' hashes.
func catManifests(t *testing.T, r *runner, blobs []string) map[string][]string {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.Stdin = strings.NewReader(strings.Join(blobs, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
	ids := map[string][]string{}
	br := bufio.NewReader(bytes.NewReader(out))
	for _, b := range blobs {
		var name, kind string
		var size int
		if _, err := fmt.Fscanf(br, "%s %s %d\n", &name, &kind, &size); err != nil || name != b {
			t.Fatalf("cat-file header for %s: %v", b, err)
		}
		body := make([]byte, size+1)
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(body), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && f[0] == "layout":
				ids[b] = append(ids[b], strings.TrimPrefix(f[1], "blake3:"))
			case len(f) >= 3 && len(f[2]) == 64 && isHex(f[2]):
				ids[b] = append(ids[b], f[2])
			}
		}
		if strings.HasPrefix(string(body), "chunkvc-manifest 2") {
			t.Fatalf("manifest %s is split; this lake's files are too small for that", b)
		}
	}
	return ids
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// gcExpireResult mirrors gc --json with a retention window.
type gcExpireResult struct {
	Stores []struct {
		Store        string `json:"store"`
		Objects      int    `json:"objects"`
		Kept         int    `json:"kept"`
		Young        int    `json:"young"`
		Deleted      int    `json:"deleted"`
		BytesDeleted int64  `json:"bytes_deleted"`
		DebrisBytes  int64  `json:"debris_bytes"`
	} `json:"stores"`
	Stages []jsonStage `json:"stages"`
	Expire *struct {
		Window         string `json:"window"`
		CommitsExpired int    `json:"commits_expired"`
		CommitsKept    int    `json:"commits_kept"`
		Record         string `json:"record"`
		Commits        []struct {
			Commit string `json:"commit"`
		} `json:"commits"`
	} `json:"expire"`
}

// jsonStage is one of --json's stages.
type jsonStage struct {
	Name     string  `json:"name"`
	Seconds  float64 `json:"seconds"`
	Items    int64   `json:"items"`
	BytesIn  int64   `json:"bytes_in"`
	BytesOut int64   `json:"bytes_out"`
}

// checkStages checks that stages are named want, in order, and take no
// longer together than the command did (wall, measured around it).
func checkStages(t *testing.T, stages []jsonStage, wall time.Duration, want ...string) {
	t.Helper()
	var names []string
	var secs float64
	for _, s := range stages {
		names = append(names, s.Name)
		secs += s.Seconds
	}
	if !slices.Equal(names, want) || secs > wall.Seconds() {
		t.Fatalf("stages %v taking %.3fs in a command of %v; want %v", names, secs, wall, want)
	}
}

// split returns the union of the objects of the commits the window keeps
// (dated after cut, HEAD, or one of tagged) and those of every commit.
func (l *lake) split(objs []map[string][]string, cut time.Time, tagged ...int) (kept, all map[string]bool, keptCommits []int) {
	kept, all = map[string]bool{}, map[string]bool{}
	for i, files := range objs {
		keep := i == len(l.commits)-1 || !l.dates[i].Before(cut) || slices.Contains(tagged, i)
		if keep {
			keptCommits = append(keptCommits, i)
		}
		for _, ids := range files {
			for _, id := range ids {
				all[id] = true
				if keep {
					kept[id] = true
				}
			}
		}
	}
	return kept, all, keptCommits
}

// checkKeptAndExpired checks out every kept commit byte for byte, and
// every expired one: exactly the files some of whose objects are gone fail,
// with exit status 6 and the expiry's message, and cat of one fails alike.
func (l *lake) checkKeptAndExpired(t *testing.T, r *runner, objs []map[string][]string, kept map[string]bool, keptCommits []int, window string) {
	t.Helper()
	isKept := map[int]bool{}
	for _, i := range keptCommits {
		isKept[i] = true
		r.cv("checkout", l.commits[i])
		for p, want := range l.files[i] {
			if !bytes.Equal(r.read(p), want) {
				t.Fatalf("checkout of kept night %d: %s is not byte-identical", i, p)
			}
		}
	}
	today := time.Now().UTC().Format("2006-01-02")
	failedSomewhere := 0
	for i := range l.commits {
		if isKept[i] {
			continue
		}
		want := map[string]bool{}
		for p := range l.files[i] {
			for _, id := range objs[i][p] {
				if !kept[id] {
					want[p] = true
				}
			}
		}
		res := r.run(binary, "checkout", "--json", l.commits[i])
		var co struct {
			Failed []struct{ Path, Error string } `json:"failed"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &co); err != nil {
			t.Fatalf("checkout --json of expired night %d: %v\n%s%s", i, err, res.stdout, res.stderr)
		}
		got := map[string]bool{}
		for _, f := range co.Failed {
			got[f.Path] = true
			msg := fmt.Sprintf("%s at %s: expired by gc on %s; retention %s", f.Path, l.commits[i][:6], today, window)
			if !strings.HasPrefix(f.Error, msg) {
				t.Fatalf("night %d: %s failed with %q, want %q…", i, f.Path, f.Error, msg)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("night %d: %d files failed, want the %d with objects only expired nights used", i, len(got), len(want))
		}
		for p := range want {
			if !got[p] {
				t.Fatalf("night %d: %s was written though an object of it is gone", i, p)
			}
		}
		if len(want) > 0 {
			failedSomewhere++
			if res.code != exitExpired {
				t.Fatalf("checkout of expired night %d: exit %d, want %d\n%s", i, res.code, exitExpired, res.stderr)
			}
			for p := range want {
				cat := r.run(binary, "cat", l.commits[i]+":"+p)
				if cat.code != exitExpired || !strings.Contains(cat.stderr, "expired by gc on "+today+"; retention "+window) || cat.stdout != "" {
					t.Fatalf("cat of expired %s at night %d: exit %d, %d bytes out\n%s", p, i, cat.code, len(cat.stdout), cat.stderr)
				}
				break
			}
		} else if res.code != 0 {
			t.Fatalf("checkout of expired night %d, whose every object a kept night shares: exit %d\n%s", i, res.code, res.stderr)
		}
		for p, b := range l.files[i] {
			if !want[p] && !bytes.Equal(r.read(p), b) {
				t.Fatalf("night %d: %s, whose objects are all kept, is not byte-identical", i, p)
			}
		}
	}
	if failedSomewhere == 0 {
		t.Fatal("no expired night lost anything: the test proves nothing")
	}
	r.cv("checkout", "--force", "HEAD")
}

// Issue 30: a lake of 64 GeoParquet partitions, 30 nightly diffs dated
// over 30 days, retention 7d. gc --expire deletes exactly the objects that
// only expired nights use (computed from the manifests with git, apart
// from gc), every kept night checks out byte for byte, and an expired one
// fails with exit status 6 naming the gc's date and window, for exactly
// the files that lost an object. With the default grace period nothing
// goes (every object is minutes old: a commit in flight may reuse it).
func TestExpireLake(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "lake/**/*.parquet")
	r.write(".chunkvc/config", append(r.read(".chunkvc/config"), "retention = 7d\n"...))
	t0 := time.Now()
	l := buildLake(t, r, 64, 30, 3)
	t.Logf("lake built in %v", time.Since(t0))
	objs := objectsOf(t, r, l.commits)
	r.git("tag", "audit-2026", l.commits[10])
	cut := time.Now().Add(-7 * 24 * time.Hour)
	kept, all, keptCommits := l.split(objs, cut, 10)
	untagged, _, _ := l.split(objs, cut)
	if len(keptCommits) != 8 || len(kept) == len(all) || len(untagged) == len(kept) {
		t.Fatalf("%d kept nights, %d of %d objects kept: the lake does not exercise the window", len(keptCommits), len(kept), len(all))
	}

	sizes := map[string]int64{}
	before := storeIDs(t, r, sizes)
	if len(before) != len(all) {
		t.Fatalf("store holds %d objects, the manifests name %d", len(before), len(all))
	}
	if res := r.run(binary, "gc", "--expire", "30 days"); res.code != exitUsage {
		t.Fatalf("gc --expire '30 days': exit %d, want %d\n%s", res.code, exitUsage, res.stderr)
	}
	var young gcExpireResult
	r.jsonOf(&young, "gc", "--dry-run")
	if young.Expire == nil || young.Expire.Window != "7d" || young.Stores[0].Deleted != 0 || young.Stores[0].Young != len(all)-len(kept) {
		t.Fatalf("gc within the grace period: %+v", young)
	}
	var dry gcExpireResult
	r.jsonOf(&dry, "gc", "--expire", "7d", "--grace", "0", "--dry-run")
	var wantBytes int64
	for id := range all {
		if !kept[id] {
			wantBytes += sizes[id]
		}
	}
	st := dry.Stores[0]
	if st.Deleted != len(all)-len(kept) || st.BytesDeleted != wantBytes || dry.Expire.CommitsExpired != 23 || dry.Expire.CommitsKept != 8 || dry.Expire.Record != "" {
		t.Fatalf("dry run: %+v %+v; want %d objects, %d bytes", st, dry.Expire, len(all)-len(kept), wantBytes)
	}
	if n := len(storeIDs(t, r, nil)); n != len(before) {
		t.Fatalf("dry run deleted: %d objects left of %d", n, len(before))
	}
	out := r.cv("gc", "--grace", "0", "--dry-run")
	if !strings.Contains(out, "would expire 23 commits, kept 8") || !strings.Contains(out, l.commits[0][:10]) {
		t.Fatalf("dry run text:\n%s", out)
	}

	var res gcExpireResult
	t0 = time.Now()
	r.jsonOf(&res, "gc", "--grace", "0") // the configured retention
	checkStages(t, res.Stages, time.Since(t0), "mark", "record", "sweep:remote")
	if sw := res.Stages[2]; sw.BytesOut != res.Stores[0].BytesDeleted+res.Stores[0].DebrisBytes || sw.Items != int64(res.Stores[0].Objects) || res.Stages[0].Items != int64(len(kept)) {
		t.Fatalf("gc stages %+v do not add up to its stores %+v", res.Stages, res.Stores)
	}
	after := storeIDs(t, r, nil)
	for id := range kept {
		if !after[id] {
			t.Fatalf("object %s of a kept night was deleted", id)
		}
	}
	for id := range after {
		if !kept[id] {
			t.Fatalf("object %s, which only expired nights use, is still stored", id)
		}
	}
	t.Logf("store: %d objects (%d bytes) before, %d after; gc deleted %d (%d bytes)", len(before), sumOf(sizes, before), len(after), res.Stores[0].Deleted, res.Stores[0].BytesDeleted)
	if res.Stores[0].BytesDeleted != wantBytes || !strings.HasPrefix(res.Expire.Record, "expired/") {
		t.Fatalf("gc: %+v %+v", res.Stores[0], res.Expire)
	}
	if n := len(strings.Fields(r.git("log", "--format=%H"))); n != 31 {
		t.Fatalf("git log shows %d commits after gc, want all 31", n)
	}
	var fsck struct {
		OK      bool `json:"ok"`
		Expired int  `json:"expired"`
	}
	r.jsonOf(&fsck, "fsck")
	if !fsck.OK || fsck.Expired != 23 {
		t.Fatalf("fsck after gc --expire: %+v; want ok, with the 23 expired commits counted apart", fsck)
	}
	// All history goes to a new remote: the expired nights' manifests
	// with it, their chunks not asked for.
	bare := t.TempDir() + "/archive.git"
	r.git("init", "-q", "--bare", "-b", "main", bare)
	r.git("remote", "add", "archive", bare)
	r.cv("push", "archive")
	if n := len(strings.Fields(r.git("--git-dir", bare, "log", "--format=%H", "main"))); n != 31 {
		t.Fatalf("the new remote has %d commits, want 31", n)
	}
	t0 = time.Now()
	l.checkKeptAndExpired(t, r, objs, kept, keptCommits, "7d")
	t.Logf("checked in %v", time.Since(t0))

	// --expire-tags lets the tagged night go too, and only it.
	var tags gcExpireResult
	r.jsonOf(&tags, "gc", "--grace", "0", "--expire-tags")
	left := storeIDs(t, r, nil)
	t.Logf("gc --expire-tags: %d objects left, deleted %d more (%d bytes)", len(left), tags.Stores[0].Deleted, tags.Stores[0].BytesDeleted)
	if len(left) != len(untagged) || tags.Stores[0].Deleted != len(kept)-len(untagged) {
		t.Fatalf("gc --expire-tags: %d objects left, want %d; %+v", len(left), len(untagged), tags.Stores[0])
	}
	for id := range untagged {
		if !left[id] {
			t.Fatalf("gc --expire-tags deleted %s of a kept night", id)
		}
	}
}

// storeIDs lists the objects of the runner's embedded store, noting each
// one's stored size in sizes when not nil.
func storeIDs(t *testing.T, r *runner, sizes map[string]int64) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	err := openStore(t, r.path(".git/chunkvc/store")).List(context.Background(), func(i store.Info) error {
		ids[i.ID.String()] = true
		if sizes != nil {
			sizes[i.ID.String()] = i.Size
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func sumOf(sizes map[string]int64, ids map[string]bool) int64 {
	var n int64
	for id := range ids {
		n += sizes[id]
	}
	return n
}

// The same against MinIO, smaller: gc --expire deletes from the bucket
// exactly the objects only expired nights use, and a clone on another
// work tree, reading the same bucket, is told why an expired night is
// gone (the record lives in the store) with exit status 6.
func TestExpireLakeS3(t *testing.T) {
	srv := miniotest.Start(t)
	r := newRunner(t)
	r.env = append(r.env, srv.Env()...)
	r.cv("init", "--store", "s3://chunkvc-test/expire")
	r.cv("track", "lake/**/*.parquet")
	l := buildLake(t, r, 8, 12, 2)
	objs := objectsOf(t, r, l.commits)
	kept, all, keptCommits := l.split(objs, time.Now().Add(-7*24*time.Hour))
	bare := t.TempDir() + "/origin.git"
	r.git("init", "-q", "--bare", "-b", "main", bare)
	r.git("remote", "add", "origin", bare)
	r.cv("push")

	var res gcExpireResult
	r.jsonOf(&res, "gc", "--expire", "7d", "--grace", "0", "--stores", "remote")
	st := res.Stores[0]
	if !strings.HasPrefix(st.Store, "s3://") || st.Objects != len(all) || st.Kept != len(kept) || st.Deleted != len(all)-len(kept) || st.Deleted == 0 {
		t.Fatalf("gc of the bucket: %+v; the manifests name %d objects, %d of kept nights", st, len(all), len(kept))
	}
	var again gcExpireResult
	r.jsonOf(&again, "gc", "--expire", "7d", "--grace", "0", "--stores", "remote", "--dry-run")
	if s := again.Stores[0]; s.Objects != len(kept) || s.Deleted != 0 {
		t.Fatalf("bucket after gc: %+v, want exactly the %d objects of kept nights", s, len(kept))
	}

	c := newRunner(t)
	c.env = r.env
	c.cv("clone", bare, "c")
	c.dir = c.path("c")
	cl := *l
	cl.r = c
	cl.checkKeptAndExpired(t, c, objs, kept, keptCommits, "7d")

	// pull --json: a git stage, then the checkout's; what write fetched
	// is what the files say they fetched.
	r.write(partPath(3), partition(t, 3, 99))
	r.write(partPath(5), partition(t, 5, 98))
	r.cv("commit", "-m", "night 13")
	r.cv("push")
	var pull struct {
		Files []struct {
			BytesFetched int64 `json:"bytes_fetched"`
		} `json:"files"`
		Stages []jsonStage `json:"stages"`
	}
	t0 := time.Now()
	c.jsonOf(&pull, "pull")
	checkStages(t, pull.Stages, time.Since(t0), "git", "plan", "write")
	var fetched int64
	for _, f := range pull.Files {
		fetched += f.BytesFetched
	}
	if w := pull.Stages[2]; fetched == 0 || w.BytesIn != fetched || w.Items != 2 {
		t.Fatalf("pull's write stage %+v; its files fetched %d bytes, 2 files changed", w, fetched)
	}
	if !bytes.Equal(c.read(partPath(3)), partition(t, 3, 99)) {
		t.Fatal("pulled partition is not byte-identical")
	}
}

// A commit made after a gc --expire with a committer date before its cut
// (history replayed with GIT_COMMITTER_DATE) is not one that gc expired:
// push uploads its chunks, fsck checks it, and a lost chunk of it is
// reported as lost, not as expired.
func TestExpireRecordOnlyCoversItsHistory(t *testing.T) {
	r := newRunner(t)
	shared := t.TempDir() + "/shared"
	r.cv("init", "--store", shared)
	r.cv("store", "trust")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(300_000, 1))
	r.cv("commit", "-m", "v1")
	r.cv("gc", "--expire", "1d", "--grace", "0")
	r.write("a.bin", randomBytes(300_000, 2))
	old := "2026-01-01T00:00:00Z"
	r.env = append(r.env, "GIT_COMMITTER_DATE="+old, "GIT_AUTHOR_DATE="+old)
	r.cv("commit", "--offline", "-m", "replayed")
	r.env = r.env[:len(r.env)-2]
	bare := t.TempDir() + "/origin.git"
	r.git("init", "-q", "--bare", "-b", "main", bare)
	r.git("remote", "add", "origin", bare)
	var push struct {
		BytesUploaded int64 `json:"bytes_uploaded"`
	}
	r.jsonOf(&push, "push")
	if push.BytesUploaded < 300_000 {
		t.Fatalf("push uploaded %d bytes of the replayed commit's 300,000", push.BytesUploaded)
	}
	var fsck struct {
		OK      bool `json:"ok"`
		Expired int  `json:"expired"`
	}
	r.jsonOf(&fsck, "fsck", "--remote")
	if !fsck.OK || fsck.Expired != 0 {
		t.Fatalf("fsck: %+v; the replayed commit is no expired one", fsck)
	}
	var ls lsChunks
	r.jsonOf(&ls, "ls-chunks", "a.bin")
	loseObject(t, shared, ls.Chunks[0].Hash)
	loseObject(t, r.path(".git/chunkvc/store"), ls.Chunks[0].Hash)
	res := r.run(binary, "cat", "HEAD:a.bin")
	if res.code == 0 || res.code == exitExpired || strings.Contains(res.stderr, "expired") {
		t.Fatalf("cat of a lost chunk of the replayed commit: exit %d\n%s", res.code, res.stderr)
	}
}
