package main

import (
	"errors"
	"flag"
	"os"
	"strconv"
	"time"

	"github.com/driftwatch/driftwatch/alerts"
	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/ui"
)

// addWebFlags declares the flags of the HTTP side beyond /metrics: the
// exporter-toolkit web configuration (TLS, basic auth on every endpoint) and
// the findings page.
func addWebFlags(fs *flag.FlagSet, w *agent.WebConfig) {
	fs.StringVar(&w.ConfigFile, "web.config.file", "",
		"exporter-toolkit web configuration file: TLS and basic auth for every endpoint (https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md); default plain HTTP")
	fs.BoolVar(&w.UI, "ui", true,
		"serve the findings page (/), /secret/NS/NAME and /api/v1/findings; --ui=false leaves /metrics, /healthz and /readyz")
	fs.BoolFunc("ui.secret-page",
		"serve /secret/NS/NAME: the key names, writers and readers of any Secret the agent watches, healthy ones too, never a value (default: on only when --web.config.file sets basic auth or verified client certificates, and in --demo). --ui.secret-page=true serves it to whoever reaches the port; =false turns it off and keeps the findings page",
		func(v string) error {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New("want true or false")
			}
			w.UIOptions.NoSecretPage = !on
			return nil
		})
	fs.StringVar(&w.UIOptions.RunbookBase, "runbook-base-url", alerts.RunbookBase,
		"base URL of the runbooks the findings page links to (<base><AlertName>.md), as `agent rules --runbook-base-url`")
	fs.DurationVar(&w.UIOptions.Refresh, "ui.refresh", 30*time.Second,
		"how often the findings page reloads itself (negative: never)")
	fs.DurationVar(&w.UIOptions.MaxAge, "ui.max-age", ui.DefaultMaxAge,
		"how old the findings the page and /api/v1/findings show may be: they reuse the last scrape's evaluation when it is this recent, else run the detectors at most once per this interval for all of them (never while a scrape does)")
	fs.IntVar(&w.UIOptions.MaxConcurrent, "ui.max-concurrent", ui.DefaultMaxConcurrent,
		"page, Secret page and API requests served at once; one more is answered 429 with Retry-After: 1 (/metrics and the probes are never limited)")
}

// reconcileSecretPage settles the default of --ui.secret-page: closed unless
// every request authenticates (basic auth users or verified client
// certificates in --web.config.file). The demo's simulated cluster holds no
// one's Secrets: its page stays on. Set on the command line or through
// DRIFTWATCH_UI_SECRET_PAGE, the flag wins.
func reconcileSecretPage(fs *flag.FlagSet, demo bool, w *agent.WebConfig) (note string, err error) {
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "ui.secret-page" })
	if explicit || demo || !w.UI { // parseFlags sets DRIFTWATCH_UI_SECRET_PAGE through fs.Set: Visit sees it
		return "", nil
	}
	auth, err := agent.WebConfigAuthenticates(w.ConfigFile)
	if err != nil {
		return "", err
	}
	w.UIOptions.NoSecretPage = !auth
	if !auth {
		return "/secret/NAMESPACE/NAME is off: --web.config.file sets no basic auth or verified client certificates (--ui.secret-page=true serves it to whoever reaches the port)", nil
	}
	return "", nil
}

// reconcileUI settles --ui against --no-key-label: the page and the API show
// key names (evidence, pictures, a Secret's keys), which --no-key-label asks
// never to export. Asked for both, it is an error; with the page on only by
// default, --no-key-label turns it off.
func reconcileUI(fs *flag.FlagSet, noKeyLabel bool, w *agent.WebConfig) (note string, err error) {
	if !noKeyLabel || !w.UI {
		return "", nil
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "ui" })
	if _, ok := os.LookupEnv("DRIFTWATCH_UI"); explicit || ok {
		return "", errors.New("--ui shows key names and --no-key-label asks that none be exported: choose one")
	}
	w.UI = false
	return "--no-key-label: the findings page and /api/v1/findings are off (they show key names)", nil
}
