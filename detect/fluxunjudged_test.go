package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func TestFluxUnjudgedAndUndetermined(t *testing.T) {
	undetermined := mt.FluxSecret(appNS, "regional", "A")
	undetermined.Undetermined = "postBuild.substituteFrom variable REGION in its name, namespace or keys"
	judged := mt.Build(fluxNS, "apps", mt.FluxSecret(appNS, "db", "A"), undetermined)
	unjudged := mt.FluxBuild{KS: model.Ref{Namespace: fluxNS, Name: "infra"}, Desired: model.FluxDesired{Unjudged: "remote_base", Detail: "x"}}
	suspended := mt.FluxBuild{KS: model.Ref{Namespace: fluxNS, Name: "paused"}, Desired: model.FluxDesired{Unjudged: "fetch_failed"}}
	s := mt.NewStore(t, mt.Kustomization(fluxNS, "apps"), mt.Kustomization(fluxNS, "infra"), mt.Kustomization(fluxNS, "paused", mt.KSSuspend()),
		mt.Kustomization(fluxNS, "fresh"), judged, unjudged, suspended)
	gotU := mt.Read(s, func(v model.View) []FluxUnjudgedKustomization { return FluxUnjudged(v) })
	if want := []FluxUnjudgedKustomization{{Namespace: fluxNS, Name: "infra", Reason: "remote_base", Detail: "x"}}; !reflect.DeepEqual(gotU, want) {
		t.Errorf("unjudged %+v, want %+v (a suspended Kustomization applies nothing; one not built yet is not counted)", gotU, want)
	}
	gotD := mt.Read(s, func(v model.View) []FluxUndeterminedObjects { return FluxUndetermined(v) })
	if want := []FluxUndeterminedObjects{{Namespace: fluxNS, Name: "apps", Objects: 1}}; !reflect.DeepEqual(gotD, want) {
		t.Errorf("undetermined %+v, want %+v", gotD, want)
	}
}
