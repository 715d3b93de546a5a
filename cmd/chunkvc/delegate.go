package main

import (
	"os"
	"os/exec"
	"path/filepath"
)

// companion is the path of the program name (chunkvc-gdal, chunkvc-gcs)
// installed beside this executable, else on PATH, else "".
func companion(name string) string {
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), name); isExec(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
