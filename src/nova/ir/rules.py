"""Extra verification rules for xDSL ops that Nova uses as they are (not subclassed).

xDSL 0.74's verifiers accept some IR that MLIR rejects, and the lowerings then crash or compute
garbage (issue 12). Rather than subclass each op only to add a check (ops built by passes from
xDSL's classes would escape it), `nova.ir.verify.verify_located` calls `check_rules(op)` for
every op after the op's own verifier; `RULES` maps an op name to its extra checks. Messages are
mlir-opt 22's where upstream rejects the IR, otherwise (constant loop steps) older upstream's.

* `cf.br` / `cf.cond_br` / `cf.switch`: the operands passed to each successor match its block
  arguments in number and type (MLIR's BranchOpInterface check).
* `scf.if` / `scf.execute_region` / `scf.while`: what each region's terminator yields matches
  the op's results (or the next region's arguments) in number and type; `scf.if` with results
  needs an else region (MLIR's RegionBranchOpInterface check).
* `affine.yield`: as many operands, of the same types, as its parent has results.
* `scf.for` / `scf.parallel`: a step defined by a constant must be positive (0 loops forever,
  a negative step ~2^64 times).
* `vector.extract` / `vector.insert`: every static position lies inside its dimension (or is
  the poison index -1, for extract and insert).
* `memref.get_global`: names a `memref.global` of exactly the result type.
* `memref.collapse_shape` / `memref.expand_shape`: one reassociation group per collapsed
  dimension, covering the expanded dimensions in order, each group's size equal to its
  collapsed dimension (both dynamic or both static); expand_shape's `output_shape` matches its
  result type.

Ops that Nova defines itself carry their checks in their own `verify_` (e.g. `gpu.printf`'s
format check in `nova.ir.gpu.kernel_ops`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerAttr, MemRefType, VectorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import DiagnosticException


class RuleError(DiagnosticException):
    """A rule violation; its message is complete (MLIR's, with the `'op' op` prefix where MLIR
    has one), so `verify_located` prints it as it is."""


Rule = Callable[[Operation], None]


def check_rules(op: Operation) -> None:
    """Run the extra rules registered for `op`'s name (raises RuleError)."""
    rule = RULES.get(op.name)
    if rule is not None:
        rule(op)


# ---- branches ---------------------------------------------------------------------------------

def _successor_operands(op: Operation) -> list[Sequence[SSAValue]] | None:
    """The operands each successor of a cf branch receives, in successor order."""
    if op.name == "cf.br":
        return [op.operands]
    if op.name == "cf.cond_br":
        sizes = _segment_sizes(op)
        if sizes is None or len(sizes) != 3:
            return None
        then_end = sizes[0] + sizes[1]
        return [op.operands[sizes[0]:then_end], op.operands[then_end:]]
    if op.name == "cf.switch":
        sizes = _segment_sizes(op)
        cases = op.properties.get("case_operand_segments")
        if sizes is None or len(sizes) != 3 or cases is None:
            return None
        case_sizes = list(cases.get_values())  # type: ignore[attr-defined]
        if sum(case_sizes) != sizes[2] or len(case_sizes) != len(op.successors) - 1:
            return None  # the op's own verifier reports these
        groups: list[Sequence[SSAValue]] = [op.operands[1:1 + sizes[1]]]
        start = 1 + sizes[1]
        for size in case_sizes:
            groups.append(op.operands[start:start + size])
            start += size
        return groups
    return None


def _segment_sizes(op: Operation) -> list[int] | None:
    attr = op.properties.get("operandSegmentSizes")
    if attr is None:
        return None
    return list(attr.get_values())  # type: ignore[attr-defined]


def _check_branch(op: Operation) -> None:
    groups = _successor_operands(op)
    if groups is None:
        return
    for number, (block, operands) in enumerate(zip(op.successors, groups, strict=False)):
        if len(operands) != len(block.args):
            raise RuleError(f"branch has {len(operands)} operands for successor #{number}, but "
                            f"target block has {len(block.args)}")
        for index, (value, arg) in enumerate(zip(operands, block.args, strict=True)):
            if value.type != arg.type:
                raise RuleError(f"type mismatch for bb argument #{index} of successor "
                                f"#{number}")


# ---- region terminators -----------------------------------------------------------------------

def _terminator(region_block: Block | None) -> Operation | None:
    if region_block is None:
        return None
    last = region_block.last_op
    return last if last is not None and last.has_trait(IsTerminator) else None


def _check_edge(op: Operation, source: Operation, target: str,
                values: Sequence[SSAValue], inputs: Sequence[Attribute]) -> None:
    """MLIR's RegionBranchOpInterface check of one control-flow edge."""
    edge = f"'{op.name}' op along control flow edge from Operation {source.name} to {target}"
    if len(values) != len(inputs):
        raise RuleError(f"{edge}: region branch point has {len(values)} operands, but region "
                        f"successor needs {len(inputs)} inputs")
    for index, (value, expected) in enumerate(zip(values, inputs, strict=True)):
        if value.type != expected:
            raise RuleError(f"{edge}: successor operand type #{index} '{value.type}' should "
                            f"match successor input type #{index} '{expected}'")


def _check_yields_to_parent(op: Operation) -> None:
    """scf.if / scf.execute_region: every region's scf.yield yields the op's result types."""
    results = [r.type for r in op.results]
    if op.name == "scf.if" and results and not op.regions[1].blocks:
        raise RuleError("'scf.if' op must have an else block if defining values")
    for region in op.regions:
        for block in region.blocks:
            last = _terminator(block)
            if last is not None and last.name == "scf.yield":
                _check_edge(op, last, "parent", last.operands, results)


def _check_while(op: Operation) -> None:
    """scf.while: scf.condition forwards the results' types (to the parent and to the after
    region's arguments); the after region's scf.yield forwards the before region's arguments."""
    if len(op.regions) != 2 or not all(r.blocks for r in op.regions):
        return
    before, after = op.regions[0].blocks.first, op.regions[1].blocks.first
    assert before is not None and after is not None
    condition = _terminator(before)
    if condition is not None and condition.name == "scf.condition":
        forwarded = condition.operands[1:]
        _check_edge(op, condition, "parent", forwarded, [r.type for r in op.results])
        _check_edge(op, condition, "Region #1", forwarded, [a.type for a in after.args])
    last = _terminator(after)
    if last is not None and last.name == "scf.yield":
        _check_edge(op, last, "Region #0", last.operands, [a.type for a in before.args])


def _check_affine_yield(op: Operation) -> None:
    parent = op.parent_op()
    if parent is None:
        return
    if len(parent.results) != len(op.operands):
        raise RuleError("'affine.yield' op parent of yield must have same number of results as "
                        "the yield operands")
    for result, operand in zip(parent.results, op.operands, strict=True):
        if result.type != operand.type:
            raise RuleError("'affine.yield' op types mismatch between yield op and its parent")


# ---- loops ------------------------------------------------------------------------------------

def constant_int(value: SSAValue) -> int | None:
    """The integer a value is defined to be by `arith.constant` / `index.constant`, else None."""
    owner = value.owner
    if not isinstance(owner, Operation) or owner.name not in ("arith.constant",
                                                              "index.constant"):
        return None
    attr = owner.properties.get("value", owner.attributes.get("value"))
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _check_for_step(op: Operation) -> None:
    steps = [op.operands[2]] if op.name == "scf.for" else list(getattr(op, "step", ()))
    for step in steps:
        value = constant_int(step)
        if value is not None and value <= 0:
            raise RuleError(f"'{op.name}' op constant step operand must be positive")


# ---- vector positions -------------------------------------------------------------------------

def _check_vector_position(op: Operation) -> None:
    attr = op.properties.get("static_position")
    vector_type = op.operands[0 if op.name == "vector.extract" else 1].type
    if attr is None or not isinstance(vector_type, VectorType):
        return
    shape = vector_type.get_shape()
    for number, (position, size) in enumerate(zip(attr.get_values(),  # type: ignore[attr-defined]
                                                  shape, strict=False), start=1):
        if position in (DYNAMIC_INDEX, -1) or 0 <= position < size:
            continue
        if op.name == "vector.extract":
            raise RuleError(f"'vector.extract' op expected position attribute #{number} to be "
                            "a non-negative integer smaller than the corresponding vector "
                            "dimension or poison (-1)")
        raise RuleError(f"'vector.insert' op expected position attribute #{number} to be a "
                        "non-negative integer smaller than the corresponding dest vector "
                        "dimension")


# ---- memref -----------------------------------------------------------------------------------

def _lookup_global(op: Operation, name: str) -> Operation | None:
    """The op named `@name` in the nearest enclosing symbol table that has one."""
    parent = op.parent_op()
    while parent is not None:
        if parent.name in ("builtin.module", "gpu.module") and parent.regions:
            for block in parent.regions[0].blocks:
                for candidate in block.ops:
                    sym = candidate.properties.get("sym_name",
                                                   candidate.attributes.get("sym_name"))
                    if getattr(sym, "data", None) == name:
                        return candidate
        parent = parent.parent_op()
    return None


def _check_get_global(op: Operation) -> None:
    ref = op.properties.get("name")
    name = getattr(getattr(ref, "root_reference", None), "data", None)
    if name is None:
        return
    found = _lookup_global(op, name)
    if found is None or found.name != "memref.global":
        raise RuleError(f"'memref.get_global' op '{name}' does not reference a valid global "
                        "memref")
    global_type = found.properties.get("type")
    result_type = op.results[0].type
    if global_type is not None and global_type != result_type:
        raise RuleError(f"'memref.get_global' op result type '{result_type}' does not match "
                        f"type '{global_type}' of the global memref @{name}")


def _check_reshape(op: Operation) -> None:
    """MLIR's verifyReshapeLikeShapes for collapse_shape (src expanded) and expand_shape (result
    expanded)."""
    src, res = op.operands[0].type, op.results[0].type
    if not isinstance(src, MemRefType) or not isinstance(res, MemRefType):
        return
    expanded, collapsed = (src, res) if op.name == "memref.collapse_shape" else (res, src)
    attr = op.properties.get("reassociation")
    if attr is None:
        return
    groups = [[int(i.value.data) for i in group] for group in attr]  # type: ignore[attr-defined]
    collapsed_shape, expanded_shape = collapsed.get_shape(), expanded.get_shape()
    prefix = f"'{op.name}' op"
    if len(groups) != len(collapsed_shape):
        raise RuleError(f"{prefix} invalid number of reassociation groups: found {len(groups)}, "
                        f"expected {len(collapsed_shape)}")
    flat = [i for group in groups for i in group]
    if len(flat) != len(expanded_shape):
        raise RuleError(f"{prefix} expanded rank ({len(expanded_shape)}) inconsistent with "
                        f"number of reassociation indices ({len(flat)})")
    if flat != list(range(len(expanded_shape))) or any(not g for g in groups):
        raise RuleError(f"{prefix} reassociation indices must be contiguous")
    for dim, group in enumerate(groups):
        sizes = [expanded_shape[i] for i in group]
        group_dynamic = any(s == DYNAMIC_INDEX for s in sizes)
        dim_dynamic = collapsed_shape[dim] == DYNAMIC_INDEX
        if group_dynamic != dim_dynamic:
            raise RuleError(f"{prefix} collapsed dim ({dim}) must be dynamic if and only if "
                            "reassociation group is dynamic")
        if not dim_dynamic and math.prod(sizes) != collapsed_shape[dim]:
            raise RuleError(f"{prefix} collapsed dim size ({collapsed_shape[dim]}) must equal "
                            f"reassociation group size ({math.prod(sizes)})")
    if op.name == "memref.expand_shape":
        _check_output_shape(op, expanded_shape)


def _check_output_shape(op: Operation, shape: Sequence[int]) -> None:
    """expand_shape's `output_shape` agrees with its result type (MLIR's checks)."""
    attr = op.properties.get("static_output_shape")
    if attr is None:
        return
    static = list(attr.get_values())  # type: ignore[attr-defined]
    prefix = "'memref.expand_shape' op"
    if len(static) != len(shape):
        raise RuleError(f"{prefix} expected number of static shape bounds to be equal to the "
                        f"output rank ({len(shape)}) but found {len(static)} inputs instead")
    dynamic = static.count(DYNAMIC_INDEX)
    if dynamic != len(op.operands) - 1:
        raise RuleError(f"{prefix} mismatch in dynamic dims in output_shape and "
                        f"static_output_shape: static_output_shape has {dynamic} dynamic dims "
                        f"while output_shape has {len(op.operands) - 1} values")
    for pos, (size, given) in enumerate(zip(shape, static, strict=True)):
        if size != DYNAMIC_INDEX and size != given:
            raise RuleError(f"{prefix} invalid output shape provided at pos {pos}")


RULES: dict[str, Rule] = {
    "cf.br": _check_branch,
    "cf.cond_br": _check_branch,
    "cf.switch": _check_branch,
    "scf.if": _check_yields_to_parent,
    "scf.execute_region": _check_yields_to_parent,
    "scf.while": _check_while,
    "affine.yield": _check_affine_yield,
    "scf.for": _check_for_step,
    "scf.parallel": _check_for_step,
    "vector.extract": _check_vector_position,
    "vector.insert": _check_vector_position,
    "memref.get_global": _check_get_global,
    "memref.collapse_shape": _check_reshape,
    "memref.expand_shape": _check_reshape,
}
"""Op name -> its extra verification rule (see the module docstring)."""
