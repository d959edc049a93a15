//===- KernelsTensorTest.cpp - dsa::Tensor ---------------------------===//

#include "dsa/Core/Tensor.h"

#include <gtest/gtest.h>

#include <cmath>

using dsa::ElementType;
using dsa::Tensor;

TEST(KernelsTensor, ElementTypeNames) {
  EXPECT_STREQ(dsa::elementTypeName(ElementType::BF16), "bf16");
  EXPECT_STREQ(dsa::elementTypeName(ElementType::F32), "f32");
  EXPECT_STREQ(dsa::elementTypeName(ElementType::I1), "i1");
  EXPECT_STREQ(dsa::elementTypeName(ElementType::I32), "i32");
  EXPECT_STREQ(dsa::elementTypeName(ElementType::I64), "i64");
  EXPECT_STREQ(dsa::elementTypeName(ElementType::Index), "index");
  EXPECT_TRUE(dsa::isFloatType(ElementType::BF16));
  EXPECT_TRUE(dsa::isFloatType(ElementType::F32));
  EXPECT_FALSE(dsa::isFloatType(ElementType::I1));
  EXPECT_FALSE(dsa::isFloatType(ElementType::I32));
  EXPECT_FALSE(dsa::isFloatType(ElementType::I64));
  EXPECT_FALSE(dsa::isFloatType(ElementType::Index));
}

TEST(KernelsTensor, ZeroFilledConstructor) {
  Tensor f(ElementType::BF16, {12, 64});
  EXPECT_EQ(f.rank(), 2);
  EXPECT_EQ(f.dim(0), 12);
  EXPECT_EQ(f.dim(1), 64);
  EXPECT_EQ(f.numElements(), 768);
  ASSERT_EQ(f.floatVector().size(), 768u);
  EXPECT_TRUE(f.intVector().empty());
  for (float v : f.floatVector())
    EXPECT_EQ(v, 0.0f);
  EXPECT_TRUE(f.isFloat());

  Tensor i(ElementType::I32, {3, 0, 2});
  EXPECT_EQ(i.numElements(), 0);
  EXPECT_TRUE(i.intVector().empty());
  EXPECT_FALSE(i.isFloat());

  Tensor k(ElementType::I64, {5});
  ASSERT_EQ(k.intVector().size(), 5u);
  for (int64_t v : k.intVector())
    EXPECT_EQ(v, 0);
}

TEST(KernelsTensor, TypeString) {
  EXPECT_EQ(Tensor(ElementType::BF16, {12, 64}).typeString(), "tensor<12x64xbf16>");
  EXPECT_EQ(Tensor(ElementType::F32, {4}).typeString(), "tensor<4xf32>");
  EXPECT_EQ(Tensor(ElementType::I32, {1, 8}).typeString(), "tensor<1x8xi32>");
  EXPECT_EQ(Tensor(ElementType::I1, {2, 0}).typeString(), "tensor<2x0xi1>");
  EXPECT_EQ(Tensor::scalarI64(7).typeString(), "tensor<i64>");
  EXPECT_EQ(Tensor::scalarIndex(7).typeString(), "tensor<index>");
}

TEST(KernelsTensor, Scalars) {
  Tensor a = Tensor::scalarI64(-42);
  EXPECT_EQ(a.rank(), 0);
  EXPECT_EQ(a.numElements(), 1);
  EXPECT_EQ(a.elementType(), ElementType::I64);
  EXPECT_EQ(a.scalarInt(), -42);
  Tensor b = Tensor::scalarIndex(13);
  EXPECT_EQ(b.elementType(), ElementType::Index);
  EXPECT_EQ(b.scalarInt(), 13);
  EXPECT_EQ(b.at(0), 13.0);
}

TEST(KernelsTensor, FromFloatsRoundsBf16) {
  // bf16 has 7 explicit mantissa bits: the ulp at 1 is 2^-7.
  const float tieDown = 1.0f + std::ldexp(1.0f, -8);                        // halfway 1 | 1+2^-7 -> even 1
  const float tieUp = 1.0f + std::ldexp(1.0f, -7) + std::ldexp(1.0f, -8);   // halfway 1+2^-7 | 1+2^-6 -> even
  const float above = 1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20);  // just above a tie -> up
  Tensor t = Tensor::fromFloats(ElementType::BF16, {2, 2}, {tieDown, tieUp, above, -3.0f});
  EXPECT_EQ(t.floats()[0], 1.0f);
  EXPECT_EQ(t.floats()[1], 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(t.floats()[2], 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(t.floats()[3], -3.0f);

  Tensor f = Tensor::fromFloats(ElementType::F32, {3}, {tieDown, tieUp, above});
  EXPECT_EQ(f.floats()[0], tieDown);
  EXPECT_EQ(f.floats()[1], tieUp);
  EXPECT_EQ(f.floats()[2], above);
  EXPECT_EQ(f.at(2), static_cast<double>(above));
}

TEST(KernelsTensor, FromIntsAndAt) {
  Tensor t = Tensor::fromInts(ElementType::I32, {2, 3}, {0, -1, 2, 3, 4, -5});
  EXPECT_EQ(t.numElements(), 6);
  EXPECT_EQ(t.ints()[1], -1);
  EXPECT_EQ(t.at(5), -5.0);
  EXPECT_EQ(t.typeString(), "tensor<2x3xi32>");
  Tensor m = Tensor::fromInts(ElementType::I1, {3}, {1, 0, 1});
  EXPECT_EQ(m.at(0), 1.0);
  EXPECT_EQ(m.at(1), 0.0);
  Tensor big = Tensor::fromInts(ElementType::I64, {1}, {int64_t(1) << 40});
  EXPECT_EQ(big.at(0), std::ldexp(1.0, 40));
}

// Contract violations of the factories are programming errors: they stop with a message naming the problem.
TEST(KernelsTensorDeathTest, ContractViolations) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH((void)Tensor::fromFloats(ElementType::BF16, {2, 2}, {1.0f}), "1 values for shape \\[2, 2\\]");
  EXPECT_DEATH((void)Tensor::fromFloats(ElementType::I32, {1}, {1.0f}), "needs a float element type, got i32");
  EXPECT_DEATH((void)Tensor::fromInts(ElementType::F32, {1}, {1}), "needs an integer element type, got f32");
  EXPECT_DEATH((void)Tensor::fromInts(ElementType::I64, {3}, {1, 2}), "2 values for shape \\[3\\]");
  EXPECT_DEATH((void)Tensor::fromInts(ElementType::I1, {2}, {0, 2}), "i1 element 1 is 2");
  EXPECT_DEATH((void)Tensor::fromInts(ElementType::I32, {1}, {int64_t(1) << 33}), "out of i32 range");
  EXPECT_DEATH((void)Tensor(ElementType::F32, {2, -1}), "negative dimension");
  Tensor t(ElementType::F32, {2});
  EXPECT_DEATH((void)t.at(2), "at\\(2\\) out of range for tensor<2xf32>");
  EXPECT_DEATH((void)t.at(-1), "out of range");
  EXPECT_DEATH((void)Tensor().at(0), "out of range");
  EXPECT_DEATH((void)t.scalarInt(), "scalarInt\\(\\) of tensor<2xf32>");
}
