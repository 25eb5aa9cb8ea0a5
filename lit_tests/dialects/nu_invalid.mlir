// Invalid nu-graphs: one diagnostic per chunk, one chunk per invariant of dialects/nu.py.
// A chunk that verifies would print a `builtin.module`; the second RUN line fails if any does.
//
// RUN: axon-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// RUN: axon-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | not grep builtin.module

// an e-node without a justification
func.func @no_proof(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %a_c = nu.class %a : !ax.tensor<[M], f32>
    %0 = ax.exp %a_c : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
    %e = nu.class %0 : !ax.tensor<[M], f32>
    nu.yield %e : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: e-node 'ax.exp' has no 'nu.proof' string attribute; every e-node records what admitted it

// -----

// a proof id missing from the proofs table
func.func @unknown_proof(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %a_c = nu.class %a : !ax.tensor<[M], f32>
    %0 = ax.exp %a_c {nu.proof = "p9"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
    %e = nu.class %0 : !ax.tensor<[M], f32>
    nu.yield %e : !ax.tensor<[M], f32>
  } {proofs = {p1 = "x"}}
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: e-node 'ax.exp' cites proof 'p9', which is not in the graph's proofs table

// -----

// a class as an e-node of another class: equal classes must be one
func.func @class_of_class(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %a_c = nu.class %a : !ax.tensor<[M], f32>
    %a_d = nu.class %a_c : !ax.tensor<[M], f32>
    nu.yield %a_d : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: 'nu.class' operand #0 is another class; classes that are equal must be one class

// -----

// an e-node in two classes
func.func @enode_two_uses(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %a_c = nu.class %a : !ax.tensor<[M], f32>
    %0 = ax.exp %a_c {nu.proof = "input"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
    %e = nu.class %0 : !ax.tensor<[M], f32>
    %f = nu.class %0 : !ax.tensor<[M], f32>
    nu.yield %e : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: 'nu.class' operand #0 (an e-node) has 2 uses; an e-node is used only by its class

// -----

// an e-node reading another e-node instead of its class
func.func @enode_reads_enode(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %a_c = nu.class %a : !ax.tensor<[M], f32>
    %0 = ax.exp %a_c {nu.proof = "input"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
    %1 = ax.exp %0 {nu.proof = "input"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
    %e = nu.class %0, %1 : !ax.tensor<[M], f32>
    nu.yield %e : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: 'nu.class' operand #0 (an e-node) has 2 uses; an e-node is used only by its class

// -----

// an e-node reading a value from outside the graph (inputs enter through classes)
func.func @enode_reads_outside(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %0 = ax.exp %a {nu.proof = "input"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
    %e = nu.class %0 : !ax.tensor<[M], f32>
    nu.yield %e : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: e-node 'ax.exp' operand #0 is not a class of this graph

// -----

// two identical e-nodes: the graph is not hash-consed
func.func @duplicate_enode(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %a_c = nu.class %a : !ax.tensor<[M], f32>
    %0 = ax.exp %a_c {nu.proof = "input"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
    %1 = ax.exp %a_c {nu.proof = "input"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
    %e = nu.class %0, %1 : !ax.tensor<[M], f32>
    nu.yield %e : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: e-node 'ax.exp' appears twice with the same operands and properties; the graph must be hash-consed

// -----

// an e-node whose type differs from its class's (the class's type constraint catches it)
func.func @type_mismatch(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %a_c = nu.class %a : !ax.tensor<[M], f32>
    %0 = ax.sum %a_c {nu.proof = "input", axes = array<i64: 0>, keepdims = true} : (!ax.tensor<[M], f32>) -> !ax.tensor<[1], f32>
    %e = "nu.class"(%0) : (!ax.tensor<[1], f32>) -> !ax.tensor<[M], f32>
    nu.yield %e : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: attribute f32[1] expected from variable 'T', but got f32[M]

// -----

// a class without e-nodes
func.func @empty_class(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %e = nu.class : !ax.tensor<[M], f32>
    nu.yield %e : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: 'nu.class' needs at least one e-node operand

// -----

// yielding a value that is not a class of the graph
func.func @yield_enode(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %a_c = nu.class %a : !ax.tensor<[M], f32>
    %0 = ax.exp %a_c {nu.proof = "input"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
    %e = nu.class %0 : !ax.tensor<[M], f32>
    nu.yield %b : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: 'nu.yield' operand #0 is not a class of this graph

// -----

// an extraction mark past the class's e-nodes
func.func @best_out_of_range(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %a_c = nu.class %a {best = #builtin.int<3>} : !ax.tensor<[M], f32>
    nu.yield %a_c : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
// CHECK: 'nu.class' best = 3 is not an operand index (the class has 1 e-nodes)
