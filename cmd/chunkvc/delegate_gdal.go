//go:build gdal

package main

// delegateToGDAL: this build has GDAL itself.
func delegateToGDAL([]string) {}
