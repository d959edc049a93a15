// RUN: dsa-opt %s | FileCheck %s
// CHECK: module
module {}
