// Two ways for a function-entry trampoline to get control back when the traced function returns
// (bench/functrace/return_scheme.cc, docs/benchmarks.md "Function tracing"). Single-threaded
// prototypes: the shadow stack and the event buffer are globals, each event is {tsc, address}.
//
// hijack   what src/patch/arch/x86_64_trampoline.S does: the entry NOP becomes `call
//          hijack_entry`; the traced function's return address (the "slot") is replaced by
//          hijack_return, which leaves by `jmp *` to the real one. The function's `ret` goes
//          where the return-stack buffer does not predict.
// callin   the entry NOP becomes `jmp <per-function stub>`; the stub loads the body's address
//          (entry + 5) into r11 and jumps to callin_entry, which moves the return address to the
//          shadow stack, pops it (rsp + 8) and `call`s the body: the call's return address takes
//          the very slot the caller's had, so stack-passed arguments stay where they were. The
//          body returns to callin_entry (predicted: its own call), which leaves by `push; ret`
//          to the caller (predicted: the caller's call is the next return-stack entry, nothing
//          was pushed for the jmp).
        .data
        .p2align 3
        .globl  rs_event_pos, rs_event_end, rs_shadow_top
rs_event_pos:   .quad 0
rs_event_end:   .quad 0
rs_event_base:  .quad 0
rs_shadow_top:  .quad 0

// Appends {rdtsc, \addr} (clobbers rax rdx \t); wraps at rs_event_end.
.macro EVENT addr, t
        rdtsc
        shlq    $32, %rdx
        orq     %rdx, %rax
        movq    rs_event_pos(%rip), \t
        movq    %rax, (\t)
        movq    \addr, 8(\t)
        addq    $16, \t
        cmpq    rs_event_end(%rip), \t
        jb      1f
        movq    rs_event_base(%rip), \t
1:      movq    \t, rs_event_pos(%rip)
.endm

// The exit's event and shadow pop, the same in both schemes: r11 = the real return address
// (rax rdx kept: return values; rcx clobbered).
.macro EXIT_EVENT
        pushq   %rax
        pushq   %rdx
        movq    $0, %rcx
        EVENT   %rcx, %rcx
        movq    rs_shadow_top(%rip), %rcx
        subq    $8, %rcx
        movq    %rcx, rs_shadow_top(%rip)
        movq    (%rcx), %r11
        popq    %rdx
        popq    %rax
.endm

        .text
        .globl  rs_set_buffer
        .type   rs_set_buffer, @function
rs_set_buffer:                          // (events, end, shadow)
        movq    %rdi, rs_event_pos(%rip)
        movq    %rdi, rs_event_base(%rip)
        movq    %rsi, rs_event_end(%rip)
        movq    %rdx, rs_shadow_top(%rip)
        ret
        .size   rs_set_buffer, .-rs_set_buffer

// ---- hijack -------------------------------------------------------------------------------
// rsp+0: entry + 5 (the patched call's return), rsp+8: the slot.
        .globl  rs_hijack_entry
        .type   rs_hijack_entry, @function
        .p2align 4
rs_hijack_entry:
        pushq   %rax
        pushq   %rdx
        pushq   %rcx
        movq    24(%rsp), %rcx
        subq    $5, %rcx
        EVENT   %rcx, %rcx
        movq    rs_shadow_top(%rip), %rcx
        movq    32(%rsp), %rax                  // the slot's return address
        movq    %rax, (%rcx)
        addq    $8, %rcx
        movq    %rcx, rs_shadow_top(%rip)
        leaq    rs_hijack_return(%rip), %rax
        movq    %rax, 32(%rsp)
        popq    %rcx
        popq    %rdx
        popq    %rax
        ret
        .size   rs_hijack_entry, .-rs_hijack_entry

        .p2align 4
rs_hijack_return:
        EXIT_EVENT
        jmp     *%r11

// ---- callin -------------------------------------------------------------------------------
// rsp+0: the caller's return address; r11: the body (entry + 5).
        .globl  rs_callin_entry
        .type   rs_callin_entry, @function
        .p2align 4
rs_callin_entry:
        pushq   %rax
        pushq   %rdx
        pushq   %rcx
        leaq    -5(%r11), %rcx
        EVENT   %rcx, %rcx
        movq    rs_shadow_top(%rip), %rcx
        movq    24(%rsp), %rax
        movq    %rax, (%rcx)
        addq    $8, %rcx
        movq    %rcx, rs_shadow_top(%rip)
        popq    %rcx
        popq    %rdx
        popq    %rax
        addq    $8, %rsp                        // the slot is free: the call below fills it
        call    *%r11
        EXIT_EVENT
        pushq   %r11
        ret
        .size   rs_callin_entry, .-rs_callin_entry

// Per-function stubs (the real runtime would write them into pages near each module).
.macro STUB name
        .globl  rs_stub_\name
        .type   rs_stub_\name, @function
        .p2align 4
rs_stub_\name:
        leaq    \name+5(%rip), %r11
        jmp     rs_callin_entry
        .size   rs_stub_\name, .-rs_stub_\name
.endm
        STUB    rs_fib
        STUB    rs_leaf
        STUB    rs_many_args

        .section .note.GNU-stack,"",@progbits
