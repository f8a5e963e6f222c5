/** One piece of rendered input for the document stage. */
export interface RenderedStream {
  /**
   * Names the input in errors: a file path relative to the app dir (slash-separated),
   * or `<stdin>`, `<kustomize build>`, `<helm template>`.
   */
  readonly label: string;
  readonly text: string;
  /** A renderer's output (helm, kustomize), which the user never sees: messages count lines within each document. */
  readonly rendered?: boolean;
}

/** The render stage's ports: where `renderSource` reads stdin from (tests pass their own stream), and who hears that it is under way. */
export interface SourceIo {
  readonly stdin: NodeJS.ReadableStream & AsyncIterable<Buffer | string>;
  /**
   * Called once the render is under way: when the renderer that produces the manifests (`helm template`,
   * `kustomize build`) has been spawned, and at once for stdin and a directory, whose reads wait on I/O.
   * main.ts waits for it before loading the rest of the plugin, so that the modules compile while the
   * render goes on, instead of delaying the renderer's start.
   */
  readonly onRendererStarted?: () => void;
}
