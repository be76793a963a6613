// aarch64 function-tracing trampolines and return thunks (src/functrace/shadow.h).
//
// A traced function's first entry NOP is `b` to its own stub (patch/arch/aarch64.cc), which sets
// x16 = the body (entry + 8) and branches to hush_ftrace_entry through x17. Nothing else changed
// on the way, so on arrival
//
//   x30 the caller's return address, sp the caller's stack pointer (stack-passed arguments at
//   sp+0...), x0-x7 / q0-q7 the arguments, x8 the indirect-result address, x16 the body
//
// The entry saves every register that may carry an argument (x0-x8, q0-q7: the C++ handler may
// use any caller-saved register, the vector ones included), calls hush_ftrace_enter_a64(entry,
// sp, x30, x19), which pushes the shadow frame {key sp - 8, return address, entry, time, x19} and
// emits func:entry, restores them all, and then
//
//   traced     x19 = the frame's address; `blr x16`: the body runs with sp as its caller left
//              it (its stack arguments in place) and returns to the thunk that follows the blr
//   untraced   (no shadow stack, --depth reached) `br x16`: the body returns to the caller
//
// x19 is callee-saved: the body keeps it or saves it and restores it, so the thunk finds its
// frame in x19, and the unwinder finds the body's x19 (the frame) wherever the body's own unwind
// info says. That is what the unwind info at the `blr` uses: the caller's return address is
// [x19 + FR_RET] (given minus 1, see there) and the caller's x19 [x19 + FR_X19], the caller's sp
// is sp. So an exception or a backtrace goes from a traced body to its real caller through here,
// with no return address to put back first (x86-64 needs interpose.cc's wrappers for that;
// on aarch64 RestoreForUnwind does nothing). longjmp over a traced body restores x19 from the
// jmp_buf, as every callee-saved register.
//
// hush_ftrace_return is where a traced body returns to: sp = the entry's, x19 = its frame,
// x0-x7 / q0-q7 the return value (HFA up to q3, x0-x7 for composites). It saves them, reads the
// caller's x19 from the frame (before the handler pops it), calls hush_ftrace_exit(sp), which
// pops the frame (and those left above it by longjmp or unwinding: FrameOfReturn matches sp - 8)
// and emits func:exit or func:call, and returns with `ret` to the address it gives, x30 set to
// it too. The return-address predictor: the entry's `b` and `br` push nothing, the body's `ret`
// pops the trampoline's `blr`, the thunk's `ret` pops the caller's own `bl`: all predicted.
//
// Marked functions (function triggers, functrace.h) enter through hush_ftrace_entry_marked,
// the same code, whose blr returns to hush_ftrace_return_marked: always hush_ftrace_exit_marked.
//
// Unlike x86_64_trampoline.S there is no fast path in asm: every traced call and return goes
// through the C++ handlers (docs/architecture.md, "aarch64", gives the instruction counts).
// The stack stays 16-byte aligned throughout (frames of 224 bytes).

// Frame (shadow.h; pinned by static_asserts in shadow.cc)
#define FR_RET 8
#define FR_X19 40
// DWARF: call-frame instructions, register numbers, expression operations
#define DW_CFA_EXPRESSION 0x10
#define DW_CFA_VAL_EXPRESSION 0x16
#define DWARF_X19 0x13
#define DWARF_X30 0x1e
#define DW_OP_BREG19 0x83
#define DW_OP_DEREF 0x06
#define DW_OP_LIT1 0x31
#define DW_OP_MINUS 0x1c

// Both paths keep a 224-byte frame: x29/x30 at sp, x0-x7 at sp+16, 16 bytes of their own at sp+80,
// q0-q7 at sp+96. The argument (entry) or return (thunk) registers, \op stp to save them, ldp to
// restore them:
.macro X0_X7_Q0_Q7 op
        \op     x0, x1, [sp, #16]
        \op     x2, x3, [sp, #32]
        \op     x4, x5, [sp, #48]
        \op     x6, x7, [sp, #64]
        \op     q0, q1, [sp, #96]
        \op     q2, q3, [sp, #128]
        \op     q4, q5, [sp, #160]
        \op     q6, q7, [sp, #192]
.endm

// The entry trampoline \name; its last instruction, the blr of the body, must be followed
// directly by the return thunk its calls return to. \sfx makes its labels its own.
.macro FTRACE_ENTRY name, sfx
        .globl  \name
        .hidden \name
        .type   \name, %function
        .p2align 4
\name:
        .cfi_startproc
        stp     x29, x30, [sp, #-224]!
        .cfi_def_cfa_offset 224
        .cfi_offset x29, -224
        .cfi_offset x30, -216
        mov     x29, sp
        X0_X7_Q0_Q7 stp
        stp     x8, x16, [sp, #80]
        sub     x0, x16, #8                     // the patched entry (the body is entry + 8)
        add     x1, sp, #224                    // the stack pointer at the entry
        mov     x2, x30                         // the caller's return address
        mov     x3, x19                         // the caller's x19
        bl      hush_ftrace_enter_a64           // the frame, or 0: untraced
        mov     x17, x0
        ldp     x8, x16, [sp, #80]
        X0_X7_Q0_Q7 ldp
        ldp     x29, x30, [sp], #224
        .cfi_def_cfa_offset 0
        .cfi_restore x29
        .cfi_restore x30
        cbnz    x17, .Lcall\sfx
        br      x16                             // untraced: the body returns to the caller
.Lcall\sfx:
        mov     x19, x17
        .cfi_endproc
        // The blr, where a traced body's unwinding comes from, has unwind info of its own (see the
        // file comment): the caller's x30 and x19 are in the frame at x19. This frame moves no
        // stack pointer, so its canonical frame address is its caller's stack pointer, which the
        // unwinder also uses to identify the caller (libgcc's uw_identify_context: a catching
        // frame is found again in phase 2 by it); marked as a signal frame, it identifies the
        // caller by that address - 1 instead, and the caller's return address is given as
        // address - 1 (precise, as after a signal), so the caller's unwind info and call-site
        // table are looked up inside its call instruction as usual.
        .cfi_startproc
        .cfi_signal_frame
        .cfi_escape DW_CFA_VAL_EXPRESSION, DWARF_X30, 5, DW_OP_BREG19, FR_RET, DW_OP_DEREF, DW_OP_LIT1, DW_OP_MINUS
        .cfi_escape DW_CFA_EXPRESSION, DWARF_X19, 2, DW_OP_BREG19, FR_X19
        blr     x16
        .cfi_endproc
        .size   \name, .-\name
.endm

// A return thunk \name: the body returned here (see above); \handler(sp) pops the frame and
// gives where to go. No unwind info: nothing unwinds through here (the handlers do not throw).
.macro FTRACE_RETURN name, handler
        .globl  \name
        .hidden \name
        .type   \name, %function
\name:
        stp     x29, x30, [sp, #-224]!
        mov     x29, sp
        X0_X7_Q0_Q7 stp
        ldr     x9, [x19, #FR_X19]              // the caller's x19, while the frame is ours
        str     x9, [sp, #80]
        add     x0, sp, #224                    // sp as the body left it: the entry's
        bl      \handler
        mov     x17, x0                         // where to go
        ldr     x19, [sp, #80]
        X0_X7_Q0_Q7 ldp
        ldp     x29, x30, [sp], #224
        mov     x30, x17
        ret
        .size   \name, .-\name
.endm

        .text

        FTRACE_ENTRY hush_ftrace_entry, _p
        // Must follow the entry's blr directly: the body returns here.
        FTRACE_RETURN hush_ftrace_return, hush_ftrace_exit

        // Marked functions (functrace.h, FunctionTrigger): the same entry, a thunk of its own.
        FTRACE_ENTRY hush_ftrace_entry_marked, _m
        FTRACE_RETURN hush_ftrace_return_marked, hush_ftrace_exit_marked

        .section .note.GNU-stack, "", %progbits
