# Two images from one Dockerfile (docs/adr/0017-two-images-built-and-run-in-ci.md):
#   --target plugin      the CMP sidecar and the render server: Node 24, the plugin and core, and the
#                        pinned kustomize and helm (the default target: the last stage);
#   --target controller  `driftless controller`: Node 24, the controller and core, production
#                        dependencies only; no helm, kustomize or plugin code in the most privileged
#                        component.
# kustomize and helm are built from the Go module proxy with exactly the commands test/tools.ts runs.
# test/tools.test.ts checks the pins and the copied paths against the repository; test/image/ builds
# both targets with buildah and runs them (README: "The images").

FROM golang:1.26 AS tools
ENV CGO_ENABLED=0 GOBIN=/out GOFLAGS=-buildvcs=false
# Pins: test/tools/versions.json (the same go install argv as test/tools.ts).
RUN go install -trimpath "-ldflags=-s -w" sigs.k8s.io/kustomize/kustomize/v5@v5.8.2
RUN go install -trimpath "-ldflags=-s -w -X helm.sh/helm/v4/internal/version.version=v4.3.2" helm.sh/helm/v4/cmd/helm@v4.3.2
RUN /out/kustomize version && /out/helm version --short

# What both images share. The Node version pinned by package.json's `node` devDependency, which the
# tests run on.
FROM node:24.21.0-slim AS runtime
LABEL org.opencontainers.image.source="https://github.com/driftless/driftless" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="Driftless"
WORKDIR /opt/driftless
COPY package.json package-lock.json ./
# npm's cache and logs go to /tmp/npm and are removed in the same layer, so no layer holds them (the
# default, /root/.npm, would keep the debug log); so is the compile cache npm itself writes to /tmp.
# --prefer-offline: a build that mounts a filled cache at /tmp (test/image/build.ts) needs no network.
# The SBOM (SPDX 2.3, of the production dependencies in the lock file) ships beside the code.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund --no-update-notifier --prefer-offline \
        --cache=/tmp/npm/cache --logs-dir=/tmp/npm/logs \
    && npm sbom --omit=dev --package-lock-only --sbom-format=spdx --cache=/tmp/npm/cache --logs-dir=/tmp/npm/logs > /opt/driftless/sbom.spdx.json \
    && rm -rf /tmp/npm /tmp/node-compile-cache
COPY bin/ bin/
COPY cli/ cli/
COPY core/ core/
RUN ln -s /opt/driftless/bin/driftless.js /usr/local/bin/driftless

# The controller: `driftless controller` (manifests/controller, charts/driftless). No ENTRYPOINT:
# the Deployment sets the command.
FROM runtime AS controller
LABEL org.opencontainers.image.title="driftless-controller"
# The Git write-back (strategy git, docs/adr/0014) runs git: over HTTPS (ca-certificates), over SSH
# (openssh-client, whose ssh-keygen also signs with an SSH key) and signed with an OpenPGP key (gpg,
# gpg-agent). apt's lists, downloaded packages and logs are removed in the same layer.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates git gpg gpg-agent openssh-client \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log /var/log/alternatives.log \
    && git --version && ssh -V && gpg --version > /dev/null
COPY controller/ controller/
RUN mkdir /opt/driftless/node-compile-cache && chown 999:999 /opt/driftless/node-compile-cache
USER 999:999
# Node's compile cache, primed as the controller's UID (NODE_COMPILE_CACHE in manifests/controller and the
# chart): without it, every new pod strips the controller's TypeScript on its first start, and Node's
# stripper (a WebAssembly module) stays resident, ~27 MB of RSS (docs/adr/0021). `controller --help`
# loads the controller's whole static module graph before it parses the flags; with the Deployment's
# NODE_OPTIONS, as V8's part of the cache is kept only for the flags it was made with. Read-only at run time.
RUN cd /tmp && export NODE_COMPILE_CACHE=/opt/driftless/node-compile-cache \
    NODE_OPTIONS='--max-semi-space-size=1 --max-old-space-size=192' \
    && driftless controller --help > /dev/null \
    && test -n "$(ls -A /opt/driftless/node-compile-cache)"

# The plugin: the sidecar's command is Argo CD's /var/run/argocd/argocd-cmp-server, which runs
# `driftless generate`; the render server runs `driftless serve` (manifests/plugin).
FROM runtime AS plugin
LABEL org.opencontainers.image.title="driftless-plugin"
COPY plugin/ plugin/
COPY examples/ examples/
COPY --from=tools /out/kustomize /out/helm /usr/local/bin/
RUN mkdir /opt/driftless/node-compile-cache && chown 999:999 /opt/driftless/node-compile-cache
# Argo CD runs CMP sidecars as UID 999.
USER 999:999
# Node's compile cache, primed here for the sidecar (NODE_COMPILE_CACHE in manifests/plugin and
# charts/driftless/argo-cd-values.yaml): every render is a new process, and without the cache each
# strips and compiles every module again (about 0.3 s of CPU instead of 0.1 s). Node keys the cache by
# version and UID, so it is built as 999, the sidecar's UID, by one run of each command and source
# type (and of generate as the render server's client, which falls back in-process when no server
# listens); read-only at run time, which Node accepts silently.
RUN mkdir /tmp/prime && cd /tmp/prime && export NODE_COMPILE_CACHE=/opt/driftless/node-compile-cache HOME=/tmp/prime \
    && driftless --help > /dev/null \
    && driftless generate --path /opt/driftless/examples/directory > /dev/null \
    && DRIFTLESS_RENDER_SOCKET=/tmp/prime/no-server.sock driftless generate --path /opt/driftless/examples/directory > /dev/null \
    && driftless explain --path /opt/driftless/examples/directory > /dev/null \
    && driftless generate - < /opt/driftless/examples/directory/deployment.yaml > /dev/null \
    && driftless generate --path /opt/driftless/examples/helm > /dev/null \
    && driftless generate --path /opt/driftless/examples/kustomize --name-prefix primed- > /dev/null \
    && printf 'apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: primed}\nspec:\n  source: {repoURL: https://example.invalid/r.git, path: app, helm: {releaseName: primed}}\n' \
        | driftless migrate-app - > /dev/null \
    && cd / && rm -rf /tmp/prime \
    && test -n "$(ls -A /opt/driftless/node-compile-cache)"
