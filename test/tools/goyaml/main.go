// Command goyaml reads a YAML stream on stdin the way Argo CD reads a config
// management plugin's output (gitops-engine's kube.SplitYAMLToString):
// apimachinery's YAMLOrJSONDecoder turns each document into JSON with
// sigs.k8s.io/yaml, empty and `null` documents are dropped. It prints one
// line per document: {"json": <the document>}, or {"error": "<message>"} and
// nothing more for the stream, as Argo CD stops there too.
// With -batch, stdin holds several streams separated by a NUL byte, and a
// line "=== <n>" precedes the output of the n-th stream. Test-only oracle.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"
)

func main() {
	batch := flag.Bool("batch", false, "stdin holds NUL-separated streams")
	flag.Parse()
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if !*batch {
		readStream(out, data)
		return
	}
	for i, stream := range bytes.Split(data, []byte{0}) {
		fmt.Fprintf(out, "=== %d\n", i)
		readStream(out, stream)
	}
}

func readStream(out io.Writer, data []byte) {
	decoder := kubeyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); err != nil {
			if !errors.Is(err, io.EOF) {
				line(out, map[string]string{"error": err.Error()})
			}
			return
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		// A JSON input document comes back as written: one line per document.
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			line(out, map[string]string{"error": err.Error()})
			return
		}
		fmt.Fprintf(out, "{\"json\":%s}\n", compact.Bytes())
	}
}

func line(out io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(out, "%s\n", b)
}
