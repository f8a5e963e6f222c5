// Command k8s is a multi-call binary holding the three Kubernetes control-plane
// components the test cluster needs. One binary means one link step and one
// cached file; each component still runs as its own process because they all
// keep process-global state (signal handlers, feature gates, klog flags).
//
// kubectl rides along for the tests' drift oracle (`kubectl diff`, client-side and
// server-side), so the oracle is the real three-way diff, not a re-implementation.
//
// Usage: k8s kube-apiserver|kube-controller-manager|kube-scheduler|kubectl [flags]
package main

import (
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata" // CronJob time zones, as the upstream mains do

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubectl "k8s.io/kubectl/pkg/cmd"
)

func main() {
	name, args := filepath.Base(os.Args[0]), os.Args[1:]
	// Dispatch on argv[0] (symlinks) or, for the plain binary, on the first argument.
	if name == "k8s" && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	var command *cobra.Command
	switch name {
	case "kube-apiserver":
		command = apiserver.NewAPIServerCommand()
	case "kube-controller-manager":
		command = controllermanager.NewControllerManagerCommand()
	case "kube-scheduler":
		command = scheduler.NewSchedulerCommand()
	case "kubectl":
		command = kubectl.NewDefaultKubectlCommand()
	default:
		fmt.Fprintln(os.Stderr, "usage: k8s kube-apiserver|kube-controller-manager|kube-scheduler|kubectl [flags]")
		os.Exit(2)
	}
	command.SetArgs(args)
	os.Exit(cli.Run(command))
}
