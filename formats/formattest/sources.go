package formattest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Sources reads the corpus's SOURCES.tsv: for each file name, its row as
// column name → value. It fails the test when the table is missing or
// lacks one of the columns named in need.
func Sources(t testing.TB, need ...string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(CorpusDir(t), "SOURCES.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var head []string
	rows := map[string]map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "\t")
		if head == nil {
			head = cells
			for _, c := range append([]string{"file"}, need...) {
				if !contains(head, c) {
					t.Fatalf("SOURCES.tsv has no %s column", c)
				}
			}
			continue
		}
		row := map[string]string{}
		for i, c := range head {
			if i < len(cells) {
				row[c] = cells[i]
			}
		}
		rows[row["file"]] = row
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
