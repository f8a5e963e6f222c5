/**
 * Every version the test cluster pins, in one place. The Go modules in
 * `test/cluster/go/*` pin the binaries' versions through their go.mod/go.sum;
 * this file pins the modules whose zips only supply CRD YAML, and names the
 * Kubernetes version stamped into the binaries. Changing anything here changes
 * the cache key, so the next `ensureClusterBinaries()` rebuilds.
 */

/** Kubernetes release built from k8s.io/kubernetes (staging modules at v0.36.3). */
export const kubernetesVersion = 'v1.36.3';

/**
 * Argo Rollouts release: the CRDs below and the controller built from
 * test/cluster/go/rollouts (whose go.mod must require the same version).
 */
export const argoRolloutsVersion = 'v1.10.1';

/**
 * Argo CD release: the binary built from test/cluster/go/argocd (whose go.mod
 * must require the same version) and the CRDs and script taken from its zip.
 */
export const argoCdVersion = 'v3.6.1';

/** Argo CD's Go module path. */
export const argoCdModule = 'github.com/argoproj/argo-cd/v3';

/**
 * Argo CD v3.6 declares `go 1.27.0`, newer than the local Go; the go command
 * fetches this toolchain from the module proxy for its build and download.
 */
export const argoCdToolchain = 'go1.27.3';

/** CRD files taken from one Go module zip on the module proxy. */
export interface CrdSource {
  /** Go module path. */
  readonly module: string;
  /** Exact module version. */
  readonly version: string;
  /**
   * The module zip's `h1:` hash. Checked after download, so the CRDs are
   * reproducible even for a module the checksum database does not know.
   */
  readonly sum: string;
  /**
   * Set when sum.golang.org does not know this module: the download then skips
   * the checksum database and relies on `sum` above alone.
   */
  readonly notInChecksumDatabase?: true;
  /** GOTOOLCHAIN for a module whose go.mod needs a newer Go than the local one (default `local`). */
  readonly toolchain?: string;
  /** The CRDs: path inside the module, and the `metadata.name` checked after reading it. */
  readonly crds: readonly CrdFile[];
}

/** One CRD file in a module. */
export interface CrdFile {
  readonly path: string;
  readonly name: string;
  /**
   * Installed only when the Argo Rollouts controller runs, which will not start
   * without them. They are megabytes of schema that slow every cluster start.
   */
  readonly onlyForRolloutsController?: true;
}

/** The CRDs installed into every test cluster before the controllers start. */
export const crdSources: readonly CrdSource[] = [
  {
    module: 'github.com/argoproj/argo-rollouts',
    // v1.10.2 needs go >= 1.26.10; v1.10.1 is the newest that works with go 1.26.8.
    version: argoRolloutsVersion,
    sum: 'h1:6oyVPGiHHxu3ixkT6mngemh88HLPDoTX1IwO6KNR1Y4=',
    crds: [
      { path: 'manifests/crds/rollout-crd.yaml', name: 'rollouts.argoproj.io' },
      { path: 'manifests/crds/analysis-run-crd.yaml', name: 'analysisruns.argoproj.io', onlyForRolloutsController: true },
      { path: 'manifests/crds/analysis-template-crd.yaml', name: 'analysistemplates.argoproj.io', onlyForRolloutsController: true },
      {
        path: 'manifests/crds/cluster-analysis-template-crd.yaml',
        name: 'clusteranalysistemplates.argoproj.io',
        onlyForRolloutsController: true,
      },
      { path: 'manifests/crds/experiment-crd.yaml', name: 'experiments.argoproj.io', onlyForRolloutsController: true },
    ],
  },
  {
    module: 'sigs.k8s.io/secrets-store-csi-driver',
    // The proxy serves this exact version but lists none, and sum.golang.org answers 404 for it.
    version: 'v1.5.4',
    sum: 'h1:enl+v1+JbKDyVjdfT/7CillZsc4rLAM9tTHyf7GeLxc=',
    notInChecksumDatabase: true,
    crds: [
      {
        path: 'config/crd/bases/secrets-store.csi.x-k8s.io_secretproviderclasses.yaml',
        name: 'secretproviderclasses.secrets-store.csi.x-k8s.io',
      },
      {
        path: 'config/crd/bases/secrets-store.csi.x-k8s.io_secretproviderclasspodstatuses.yaml',
        name: 'secretproviderclasspodstatuses.secrets-store.csi.x-k8s.io',
      },
    ],
  },
  {
    module: 'github.com/cert-manager/cert-manager',
    version: 'v1.21.2',
    sum: 'h1:UWgoYM+KLNtRlqmoWOKjKBOBUPVHeepQ6/ac3ERJW68=',
    crds: [{ path: 'deploy/crds/cert-manager.io_certificates.yaml', name: 'certificates.cert-manager.io' }],
  },
  {
    module: 'github.com/external-secrets/external-secrets',
    version: 'v1.3.2',
    sum: 'h1:u2J8RjlHIeF0oZCqtl92adI/uZWUwOesJIDkfql6LqQ=',
    crds: [{ path: 'config/crds/bases/external-secrets.io_externalsecrets.yaml', name: 'externalsecrets.external-secrets.io' }],
  },
  {
    module: 'github.com/bitnami-labs/sealed-secrets',
    version: 'v0.40.0',
    sum: 'h1:rvCP35JL8ZV5LNA2SrwNR6iLyoM3ulrSFWN0lBtYEYI=',
    crds: [{ path: 'helm/sealed-secrets/crds/bitnami.com_sealedsecrets.yaml', name: 'sealedsecrets.bitnami.com' }],
  },
];

/**
 * What the Argo CD components need from Argo CD's own module zip: the CRDs of
 * the objects the application controller reads (installed only by
 * `startArgoCD`, so other cluster tests do not pay for 400 KB of schema), and
 * the repo server's `git-verify-wrapper.sh`, which must be on its PATH.
 */
export const argoCdSource: CrdSource & { readonly scripts: readonly string[] } = {
  module: argoCdModule,
  version: argoCdVersion,
  sum: 'h1:OmhqeKiR3C//awbFrhQqFdtRI+Qiv17j8vqm3UkMj/g=',
  toolchain: argoCdToolchain,
  crds: [
    { path: 'manifests/crds/application-crd.yaml', name: 'applications.argoproj.io' },
    { path: 'manifests/crds/appproject-crd.yaml', name: 'appprojects.argoproj.io' },
  ],
  scripts: ['hack/git-verify-wrapper.sh'],
};
