package kube

import (
	"testing"

	"k8s.io/client-go/rest"
)

func TestProtobufConfigIsACopy(t *testing.T) {
	rc := &rest.Config{Host: "https://example", QPS: 20, Burst: 40, UserAgent: "driftwatch/test"}
	pc := ProtobufConfig(rc)
	if pc.ContentType != "application/vnd.kubernetes.protobuf" ||
		pc.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
		t.Fatalf("content types %q / %q", pc.ContentType, pc.AcceptContentTypes)
	}
	if pc.Host != rc.Host || pc.QPS != rc.QPS || pc.Burst != rc.Burst || pc.UserAgent != rc.UserAgent {
		t.Fatalf("copy lost settings: %+v", pc)
	}
	if rc.ContentType != "" || rc.AcceptContentTypes != "" {
		t.Fatalf("the original (used by the dynamic client) must stay JSON: %q / %q", rc.ContentType, rc.AcceptContentTypes)
	}
}
