// Command goyaml reads a YAML stream on stdin the way Argo CD reads a config
// management plugin's output: split into documents with apimachinery's
// YAMLReader (as gitops-engine's kube.SplitYAMLToString does), drop empty and
// `null` documents, convert each with sigs.k8s.io/yaml.YAMLToJSON. It prints
// one line per document: {"json": <the document>} or {"error": "<message>"}.
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
	"sigs.k8s.io/yaml"
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
	reader := kubeyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			line(out, map[string]string{"error": "split: " + err.Error()})
			return
		}
		doc = bytes.TrimSpace(doc)
		if len(doc) == 0 || bytes.Equal(doc, []byte("null")) {
			continue
		}
		converted, err := yaml.YAMLToJSON(doc)
		if err != nil {
			line(out, map[string]string{"error": err.Error()})
			continue
		}
		fmt.Fprintf(out, "{\"json\":%s}\n", converted)
	}
}

func line(out io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(out, "%s\n", b)
}
