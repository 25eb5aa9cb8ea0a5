// Read by ../expected_errors.mlir: three annotations that do not hold.

// The diagnostic is produced, but its text is not the annotated one.
func.func @wrong_text(%x: !ax.tensor<[M], i32>) {
  // expected-error @+1 {{needs an integer type}}
  %r = ax.exp %x : (!ax.tensor<[M], i32>) -> !ax.tensor<[M], i32>
  func.return
}

// -----

// A diagnostic that no annotation expects.
func.func @unannotated(%x: !ax.tensor<[M], i32>) {
  %r = ax.exp %x : (!ax.tensor<[M], i32>) -> !ax.tensor<[M], i32>
  func.return
}

// -----

// An annotation that no diagnostic meets: the chunk is valid.
func.func @valid(%x: !ax.tensor<[M], f32>) {
  // expected-error @+1 {{something}}
  %r = ax.exp %x : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
  func.return
}
