"""nova-objdump: show what a .nova bundle holds (after validating it).

    nova-objdump prog.nova               summary: format, producer, arch, entry points, device
                                         modules with kernels, parameter layouts and payloads
    nova-objdump prog.nova --sections    the ELF section table
    nova-objdump prog.nova --manifest    the summary (combine with other options)
    nova-objdump prog.nova --ptx [MOD]   the PTX of every device module, or of MOD
    nova-objdump prog.nova --json        the manifest JSON exactly as stored

Several options print their parts in the order sections, manifest, ptx, json. Errors print as
`nova-objdump: error: ...` and exit 1. The bundle is fully validated first (seal included).
"""

from __future__ import annotations

import argparse
import sys

from nova.bundle.elf import parse_elf
from nova.bundle.format import MANIFEST_SECTION, DeviceModule, Kernel, PayloadKind, TypeSpec
from nova.bundle.reader import Bundle, describe_entry, read_bundle_file
from nova.bundle.signature import signature_status
from nova.cli.toolmain import EXIT_ERROR, EXIT_OK, run_tool
from nova.errors import NovaError

PROG = "nova-objdump"
_ALL = "\0all"  # --ptx without a module name


def main(argv: list[str] | None = None) -> int:
    """Entry point of `nova-objdump` and `python -m nova objdump`."""
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    return run_tool(PROG, lambda: _run(args))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Show the contents of a .nova bundle.")
    parser.add_argument("bundle", help="the .nova file")
    parser.add_argument("--manifest", action="store_true",
                        help="print the summary of the manifest (the default)")
    parser.add_argument("--ptx", nargs="?", const=_ALL, default=None, metavar="MODULE",
                        help="print the PTX of every device module, or of MODULE")
    parser.add_argument("--json", action="store_true", help="print the manifest JSON as stored")
    parser.add_argument("--sections", action="store_true", help="print the ELF section table")
    parser.add_argument("--arch", default=None,
                        help="also require the bundle to be built for this GPU arch (e.g. sm_90)")
    return parser


def _run(args: argparse.Namespace) -> int:
    try:
        bundle = read_bundle_file(args.bundle, expected_arch=args.arch)
        parts: list[str] = []
        show_summary = args.manifest or not (args.sections or args.ptx or args.json)
        if args.sections:
            parts.append(format_sections(bundle))
        if show_summary:
            parts.append(format_summary(bundle))
        if args.ptx is not None:
            parts.append(_ptx_text(bundle, None if args.ptx == _ALL else args.ptx))
        if args.json:
            parts.append(_manifest_text(bundle))
    except NovaError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write("\n".join(p if p.endswith("\n") else p + "\n" for p in parts))
    sys.stdout.flush()
    return EXIT_OK


def format_summary(bundle: Bundle) -> str:
    """The human summary: header, entry points, device modules, kernels and payloads."""
    m = bundle.manifest
    lines = [
        f"{bundle.name}: {m.format} format version {m.format_version}, produced by {m.producer}",
        f"  source:     {m.source_name or '(unknown)'}",
        f"  arch:       {m.arch}",
        f"  host:       {m.host_triple}, runtime ABI version {m.abi_version}",
        f"  size:       {len(bundle.object_bytes)} bytes, seal sha256 {bundle.seal}",
        f"  signature:  {signature_status(parse_elf(bundle.object_bytes))}",
    ]
    lines += [f"  {key}: {value}" for key, value in sorted(m.extra.items())]
    lines += ["", f"entry points ({len(m.entries)}):"]
    lines += [f"  {describe_entry(e)}    [symbol {e.symbol}]" for e in m.entries]
    lines += ["", f"device modules ({len(m.modules)}):"]
    for module in m.modules:
        lines += _module_lines(module)
    return "\n".join(lines) + "\n"


def _module_lines(module: DeviceModule) -> list[str]:
    lines = [f"  {module.name}:", "    payloads:"]
    width = max((len(p.section) for p in module.payloads), default=0)
    for p in module.payloads:
        lines.append(f"      {p.kind.value:<7} {p.section:<{width}}  {p.size:>9} bytes  "
                     f"{p.arch:<7} sha256 {p.sha256}")
    if not module.payloads:
        lines.append("      (none)")
    lines.append(f"    kernels ({len(module.kernels)}):")
    for kernel in module.kernels:
        lines += _kernel_lines(kernel)
    return lines


def _kernel_lines(kernel: Kernel) -> list[str]:
    args = ", ".join(_type_text(t) for t in kernel.args)
    lines = [f"      {kernel.name}({args})",
             f"        static shared memory: {kernel.static_shared_bytes} bytes, barriers: "
             f"{'yes' if kernel.uses_barriers else 'no'}",
             f"        parameters ({len(kernel.params)}, {sum(p.size for p in kernel.params)} "
             f"bytes):"]
    for index, param in enumerate(kernel.params):
        lines.append(f"          #{index:<3} {param.llvm_type:<8} {param.size:>3} bytes  "
                     f"from arg {param.arg_index}")
    return lines


def _type_text(spec: TypeSpec) -> str:
    return spec.mlir or f"{spec.kind} {spec.dtype}"


def format_sections(bundle: Bundle) -> str:
    """The ELF section table, readelf-like (index, name, type, flags, offset, size, align)."""
    width = max(len(s.name) for s in bundle.sections)
    lines = [f"sections ({len(bundle.sections) - 1}):",
             f"  {'[Nr]':<5} {'Name':<{width}}  {'Type':<13} {'Flags':<5} {'Offset':>10} "
             f"{'Size':>10} {'Align':>5}"]
    for s in bundle.sections[1:]:
        lines.append(f"  [{s.index:>2}]  {s.name:<{width}}  {s.type_name:<13} "
                     f"{s.flag_letters:<5} {s.offset:>#10x} {s.size:>10} {s.addralign:>5}")
    return "\n".join(lines) + "\n"


def _ptx_text(bundle: Bundle, module_name: str | None) -> str:
    names = [m.name for m in bundle.manifest.modules] if module_name is None else [module_name]
    texts = []
    for name in names:
        ptx = bundle.ptx(name)  # raises for an unknown module
        if ptx is None:
            if module_name is None:
                continue
            kinds = ", ".join(p.kind.value for p in bundle.module(name).payloads)
            raise _ObjdumpError(f"device module '{name}' has no PTX image (it has: {kinds}); "
                                f"it was built without the NVPTX target")
        texts.append(f"// ---- device module '{name}' ({PayloadKind.PTX.value}) ----\n{ptx}"
                     if module_name is None else ptx)
    if not texts:
        raise _ObjdumpError(f"{bundle.name} holds no PTX image")
    return "\n".join(texts)


def _manifest_text(bundle: Bundle) -> str:
    section = next(s for s in bundle.sections if s.name == MANIFEST_SECTION)
    start = section.offset
    return bundle.object_bytes[start:start + section.size].decode("utf-8")


class _ObjdumpError(NovaError):
    """A request the bundle cannot satisfy (e.g. --ptx of a module without PTX)."""
