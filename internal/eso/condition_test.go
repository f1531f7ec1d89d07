package eso

import "testing"

func TestProviderReadFailed(t *testing.T) {
	for _, tc := range []struct {
		c    StatusCondition
		want bool
	}{
		// ESO v0.20.4: the fixed message of a failed provider read.
		{StatusCondition{Type: "Ready", Status: "False", Reason: "SecretSyncedError", Message: "could not get secret data from provider"}, true},
		// Later versions append safe details.
		{StatusCondition{Type: "Ready", Status: "False", Reason: "SecretSyncedError", Message: "could not get secret data from provider: connection refused"}, true},
		// Other SecretSyncedError causes: not a provider read.
		{StatusCondition{Type: "Ready", Status: "False", Reason: "SecretSyncedError", Message: "could not update secret"}, false},
		{StatusCondition{Type: "Ready", Status: "False", Reason: "SecretSyncedError", Message: "target is owned by another ExternalSecret"}, false},
		// Ready: whatever the message.
		{StatusCondition{Type: "Ready", Status: "True", Reason: "SecretSynced", Message: "could not get secret data from provider"}, false},
		{StatusCondition{Type: "Ready", Status: "False"}, false},
	} {
		if got := ProviderReadFailed(tc.c); got != tc.want {
			t.Errorf("ProviderReadFailed(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
}

// The decoder reads the message (for ProviderReadFailed only).
func TestDecodeReadsConditionMessage(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "e", "namespace": "n"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": "False", "reason": "SecretSyncedError", "message": "could not get secret data from provider",
		}}},
	}
	var es ExternalSecret
	if err := Decode(obj, &es); err != "" {
		t.Fatal(err)
	}
	if len(es.Status.Conditions) != 1 || !ProviderReadFailed(es.Status.Conditions[0]) {
		t.Fatalf("conditions %+v", es.Status.Conditions)
	}
}
