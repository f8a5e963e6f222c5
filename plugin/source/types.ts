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

/** Where `renderSource` reads stdin from; tests pass their own stream. */
export interface SourceIo {
  readonly stdin: NodeJS.ReadableStream & AsyncIterable<Buffer | string>;
}
