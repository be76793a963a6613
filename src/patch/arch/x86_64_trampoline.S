// x86-64 function-tracing trampoline and return thunk (src/functrace/shadow.h).
//
// hush_ftrace_entry is reached by the `call` patched over a function's entry NOP (through a
// per-module stub `jmp *0(%rip)` when the module is more than 2 GiB away, discover.cc):
//
//   rsp+0   the patched call's return address: the function body (entry + 5)
//   rsp+8   the traced function's own return address (its "slot", hijacked by the handler)
//
// At a function entry rsp % 16 == 8; the patched call makes it 0 (movups all the same, in case
// hand-written code calls a traced function with another alignment). Saved: every register that
// may carry an argument (rdi rsi rdx rcx r8 r9, rax = vector-register count for varargs, r10 =
// static chain) and xmm0-7 (float arguments). r11 is scratch at a call boundary.
//
// hush_ftrace_return is where a hijacked function returns to: rsp = slot + 8, rsp % 16 == 0.
// It keeps the return registers (rax rdx xmm0 xmm1; x87 st0/st1 are not touched by the
// handler) and returns to the real address that hush_ftrace_exit() hands back.
        .text

        .globl  hush_ftrace_entry
        .hidden hush_ftrace_entry
        .type   hush_ftrace_entry, @function
        .p2align 4
hush_ftrace_entry:
        .cfi_startproc
        subq    $192, %rsp
        .cfi_adjust_cfa_offset 192
        movq    %rax, 0(%rsp)
        movq    %rdi, 8(%rsp)
        movq    %rsi, 16(%rsp)
        movq    %rdx, 24(%rsp)
        movq    %rcx, 32(%rsp)
        movq    %r8, 40(%rsp)
        movq    %r9, 48(%rsp)
        movq    %r10, 56(%rsp)
        movups  %xmm0, 64(%rsp)
        movups  %xmm1, 80(%rsp)
        movups  %xmm2, 96(%rsp)
        movups  %xmm3, 112(%rsp)
        movups  %xmm4, 128(%rsp)
        movups  %xmm5, 144(%rsp)
        movups  %xmm6, 160(%rsp)
        movups  %xmm7, 176(%rsp)
        movq    192(%rsp), %rdi
        leaq    200(%rsp), %rsi
        call    hush_ftrace_enter
        movq    0(%rsp), %rax
        movq    8(%rsp), %rdi
        movq    16(%rsp), %rsi
        movq    24(%rsp), %rdx
        movq    32(%rsp), %rcx
        movq    40(%rsp), %r8
        movq    48(%rsp), %r9
        movq    56(%rsp), %r10
        movups  64(%rsp), %xmm0
        movups  80(%rsp), %xmm1
        movups  96(%rsp), %xmm2
        movups  112(%rsp), %xmm3
        movups  128(%rsp), %xmm4
        movups  144(%rsp), %xmm5
        movups  160(%rsp), %xmm6
        movups  176(%rsp), %xmm7
        addq    $192, %rsp
        .cfi_adjust_cfa_offset -192
        ret
        .cfi_endproc
        .size   hush_ftrace_entry, .-hush_ftrace_entry

        .globl  hush_ftrace_return
        .hidden hush_ftrace_return
        .type   hush_ftrace_return, @function
        .p2align 4
hush_ftrace_return:
        // No CFI: the unwinder never walks through here (interpose.cc restores real return
        // addresses before any unwinding starts).
        subq    $64, %rsp
        movups  %xmm0, 0(%rsp)
        movups  %xmm1, 16(%rsp)
        movq    %rax, 32(%rsp)
        movq    %rdx, 40(%rsp)
        leaq    64(%rsp), %rdi
        call    hush_ftrace_exit
        movq    %rax, 56(%rsp)
        movups  0(%rsp), %xmm0
        movups  16(%rsp), %xmm1
        movq    32(%rsp), %rax
        movq    40(%rsp), %rdx
        addq    $56, %rsp
        ret
        .size   hush_ftrace_return, .-hush_ftrace_return

        .section .note.GNU-stack, "", @progbits
