package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

// writeProxy adds mod, whose files are in dir, to the file-based module
// proxy in proxyDir (GOPROXY=file://proxyDir): its version list, info,
// go.mod and zip. It returns the go.sum hashes of the zip and the go.mod.
func writeProxy(proxyDir string, mod module.Version, dir string) (hashes, error) {
	at, err := proxyPath(proxyDir, mod)
	if err != nil {
		return hashes{}, err
	}
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		return hashes{}, err
	}
	if err := writeZip(at+".zip", mod, dir); err != nil {
		return hashes{}, err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return hashes{}, err
	}
	info, err := json.Marshal(map[string]string{"Version": mod.Version, "Time": time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return hashes{}, err
	}
	for name, data := range map[string][]byte{
		at + ".mod":                             gomod,
		at + ".info":                            info,
		filepath.Join(filepath.Dir(at), "list"): []byte(mod.Version + "\n"),
	} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return hashes{}, err
		}
	}
	return sumOf(at+".zip", gomod)
}

// proxyPath returns where a proxy in proxyDir keeps mod's files, without
// the extension: proxyDir/<escaped path>/@v/<escaped version>.
func proxyPath(proxyDir string, mod module.Version) (string, error) {
	p, err := module.EscapePath(mod.Path)
	if err != nil {
		return "", err
	}
	v, err := module.EscapeVersion(mod.Version)
	if err != nil {
		return "", err
	}
	return filepath.Join(proxyDir, filepath.FromSlash(p), "@v", v), nil
}

// writeZip writes the module zip of mod from dir to name: zip.CreateFromDir
// leaves out the modules nested in dir.
func writeZip(name string, mod module.Version, dir string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(f, mod, dir); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sumOf returns the go.sum hashes of the module zip zipFile and go.mod gomod.
func sumOf(zipFile string, gomod []byte) (hashes, error) {
	z, err := dirhash.HashZip(zipFile, dirhash.Hash1)
	if err != nil {
		return hashes{}, err
	}
	m, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
	return hashes{Zip: z, Mod: m}, err
}
