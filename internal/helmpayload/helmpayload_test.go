package helmpayload

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"testing"
)

func TestPayloadIsBase64GzipJSON(t *testing.T) {
	r := Release{Name: "shop", Namespace: "prod", Version: 3, Manifest: "kind: Secret\n", Chart: map[string]any{"metadata": map[string]any{"name": "app"}}}
	raw, err := base64.StdEncoding.DecodeString(string(r.Payload()))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name, Namespace, Manifest string
		Version                   int
		Info                      struct{ Status string }
		Chart                     struct{ Metadata struct{ Name string } }
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Name != "shop" || got.Namespace != "prod" || got.Version != 3 || got.Info.Status != "deployed" || got.Manifest != "kind: Secret\n" || got.Chart.Metadata.Name != "app" {
		t.Fatalf("%+v", got)
	}
	s := r.Secret()
	if s.Name != "sh.helm.release.v1.shop.v3" || s.Namespace != "prod" || s.Type != SecretType || s.Labels["version"] != "3" || s.Labels["status"] != "deployed" || s.Labels["owner"] != "helm" {
		t.Fatalf("%+v", s.ObjectMeta)
	}
}
