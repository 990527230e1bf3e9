// RUN: nova-opt %s | nova-opt | FileCheck %s

// gpu.binary / #gpu.object / #gpu.select_object and #nvvm.target in each printed form, as
// mlir-opt 22 prints them (tests/unit/test_dialect_files.py compares): object formats (fatbin,
// the default, prints without a keyword), properties, escaped bytes, an offloading handler,
// target options that are upstream's defaults dropped.

module attributes {gpu.container_module} {
  // CHECK: gpu.module @targets [#nvvm.target<O = 3, chip = "sm_90">, #nvvm.target, #nvvm.target<features = "+ptx80", flags = {fast}>]
  gpu.module @targets [#nvvm.target<chip = "sm_90", O = 3>, #nvvm.target<O = 2, chip = "sm_50", triple = "nvptx64-nvidia-cuda">, #nvvm.target<features = "+ptx80", flags = {fast}>] {
  }
  // CHECK: gpu.binary @formats  [#gpu.object<#nvvm.target, offload = "BC">, #gpu.object<#nvvm.target, assembly = "\FF\00a\0A\22">, #gpu.object<#nvvm.target, bin = "x">, #gpu.object<#nvvm.target, "fat">]
  gpu.binary @formats [#gpu.object<#nvvm.target, offload = "BC">, #gpu.object<#nvvm.target, assembly = "\FF\00a\0A\22">, #gpu.object<#nvvm.target, bin = "x">, #gpu.object<#nvvm.target, fatbin = "fat">]
  // CHECK: gpu.binary @props  [#gpu.object<#nvvm.target<chip = "sm_80">, properties = {O = 3 : i32, note = "x"}, assembly = "ptx">]
  gpu.binary @props [#gpu.object<#nvvm.target<chip = "sm_80">, properties = {O = 3 : i32, note = "x"}, assembly = "ptx">]
  // CHECK: gpu.binary @selected <#gpu.select_object<1 : i64>> [#gpu.object<#nvvm.target, "a">, #gpu.object<#nvvm.target<chip = "sm_90">, "b">]
  gpu.binary @selected <#gpu.select_object<1>> [#gpu.object<#nvvm.target, "a">, #gpu.object<#nvvm.target<chip = "sm_90">, "b">]
  // CHECK: gpu.binary @default_handler  [#gpu.object<#nvvm.target, "a">]
  gpu.binary @default_handler <#gpu.select_object> [#gpu.object<#nvvm.target, "a">]
  // CHECK: gpu.binary @with_attrs <#gpu.select_object<0 : i64>> {tag = 1 : i64} [#gpu.object<#nvvm.target, "a">]
  gpu.binary @with_attrs <#gpu.select_object<0>> {tag = 1} [#gpu.object<#nvvm.target, "a">]
}
