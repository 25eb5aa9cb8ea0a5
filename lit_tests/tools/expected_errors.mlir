// --verify-diagnostics checks `expected-error` annotations, as mlir-opt does: each chunk's
// diagnostic must be annotated (on its line, @+N/@-N lines away, or @unknown), and each
// annotation met. This file's annotations all hold, so the run exits 0; the one under Inputs/
// holds three that do not, and each is reported at its place, with exit 1.
//
// RUN: axon-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=PRINTED
// RUN: not axon-opt %S/Inputs/expected_errors_unmet.mlir --split-input-file --verify-diagnostics 2>&1 >/dev/null | filecheck %s --check-prefix=UNMET

// The diagnostics are still printed, as without annotations.
// PRINTED: expected_errors.mlir:{{[0-9]+}}:3: error: 'ax.add': result type is !ax.tensor<[M, 1], f32>
// PRINTED: value %y is used but never defined

// UNMET:      expected_errors_unmet.mlir:6:3: error: unexpected error: 'ax.exp': operand #0 (input) has element type i32; 'exp' needs a float type
// UNMET-NEXT: expected_errors_unmet.mlir:5:3: error: expected error at line 6 was not produced: {{[{][{]}}needs an integer type{{[}][}]}}
// UNMET-NEXT: expected_errors_unmet.mlir:14:3: error: unexpected error: 'ax.exp'
// UNMET-NEXT: expected_errors_unmet.mlir:22:3: error: expected error at line 23 was not produced: {{[{][{]}}something{{[}][}]}}
// UNMET-NOT:  error

func.func @bad_result(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, 1], f32>) {
  // expected-error @+1 {{'ax.add': result type is !ax.tensor<[M, 1], f32>, but the operands give}}
  %b = ax.add %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, 1], f32>
  func.return
}

// -----

func.func @undefined(%x: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %a = ax.exp %y : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> // expected-error {{value %y is used but never defined}}
  func.return %a : !ax.tensor<[M], f32>
}

// -----

func.func @stray(%x: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  )
  // expected-error @-1 {{expected an operation or '}' to close the region opened at}}
  func.return %x : !ax.tensor<[M], f32>
}

// -----

func.func @exp_i32(%x: !ax.tensor<[M], i32>) {
  // expected-error @below {{'exp' needs a float type}}
  %r = ax.exp %x : (!ax.tensor<[M], i32>) -> !ax.tensor<[M], i32>
  func.return
}

// -----

func.func @unclosed(%x: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  func.return %x : !ax.tensor<[M], f32>
// expected-error @+1 {{expected '}' to close the region opened at}}
