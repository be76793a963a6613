// x86-64 function-tracing trampoline and return thunk (src/functrace/shadow.h).
//
// A traced function's entry NOP is patched to `jmp` to its own 16-byte stub (discover.cc, in an
// arena within 2 GiB of the module), which does `lea entry+5(%rip), %r11` and jumps to
// hush_ftrace_entry. Nothing is pushed on the way, so on arrival
//
//   rsp+0   the traced function's return address (its "slot"), r11 the body (entry + 5)
//
// and the entry pushes r11 to get the layout both paths below use (body at rsp+0, slot at rsp+8).
// Once the frame {slot, return address, site, ts} is on the shadow stack, the entry pops the
// slot (rsp + 8) and `call`s the body: the call's return address, hush_ftrace_return, lands in
// the very slot the caller's return address occupied, so stack-passed arguments stay in place.
// The body's `ret` goes where the return-stack buffer predicts (the entry's own call), and the
// thunk leaves by `push; ret` to the real return address, predicted too: the caller's `call`
// is the next return-stack entry, since nothing was pushed for the jumps. (The earlier scheme
// overwrote the slot with the thunk's address, so every traced return mispredicted;
// bench/functrace/return_scheme.cc measures both.)
//
// hush_ftrace_return is where a traced body returns to: rsp = slot + 8.
//
// Marked functions (a function trigger, `--snapshot-on 'func:NAME>5ms'`: functrace.h) enter
// through hush_ftrace_entry_marked, the same code (the FTRACE_ENTRY macro, instantiated twice),
// whose call returns to hush_ftrace_return_marked: always the C++ exit, which checks the
// triggers. The unmarked pair below is unchanged by them.
//
// Fast paths, in this file, without calling C++ and without touching a vector register:
//
//   entry   shadow stack not full (and below --depth); no minimum duration: func:entry fits the
//           writer's open packet as a compact event (nesting 0, id < 255, room for 12 bytes,
//           timestamp gap < 2^24 cycles). One rdtsc. Saves rax rcx rdx, the only registers
//           it writes besides r11 (scratch at a call boundary).
//   exit    the innermost shadow frame is this return's (same slot); then either func:exit
//           fits the open packet (as above), or a minimum duration is set and the call was
//           shorter (dropped: nothing written). One rdtsc. Writes only rax rdx (saved), rcx
//           rsi rdi r8-r11 (free at a return: not return registers).
//
// Everything else (first traced call of a thread, full shadow stack, a frame left by longjmp or
// unwinding, a new packet, an extended header, a nested event, a long call with a minimum
// duration) takes the slow path: every register that may carry an argument (rdi rsi rdx rcx
// r8 r9, rax = vector-register count for varargs, r10 = static chain, xmm0-7) or a return value
// (rax rdx xmm0 xmm1) is saved and the C++ handler of shadow.cc runs. x87 st0/st1 (long double
// returns) are never touched: the handlers do no x87 arithmetic.
//
// The fast paths copy the layouts of ThreadWriter and CommitWord (include/hushtrace/internal/
// thread_writer.h: TryReserveFast + CommitEvent, same order of stores) and of Shadow/Frame
// (shadow.h); shadow.cc pins every offset used here with static_asserts (kAsm* constants).
// A signal handler that runs between two instructions here sees: nesting raised before `pos` is
// read (its events are refused as nested, like emit.h), the frame reserved (top + 1) before it
// is written, the frame read before top is lowered: the same rules as the C++ handlers.

// ThreadWriter (thread_writer.h)
#define TW_POS 0
#define TW_END 8
#define TW_NESTING 24
#define TW_COMMIT 32
// CommitWord
#define CW_OFFSET 0
#define CW_TIMESTAMP 8
// Shadow / Frame (shadow.h): frames[i] at SH_FRAMES + 40 * i
#define SH_TOP 0
#define SH_FRAMES 8
#define FR_SLOT 0
#define FR_RET 8
#define FR_SITE 16
#define FR_TS 24
#define FR_RESTORED 32
// hush_ft_settings (shadow.h, Settings)
#define ST_MAX_DEPTH 0
#define ST_MIN_TICKS 8
// func:entry / func:exit: 4-byte compact header + 8-byte address
#define EVENT_SIZE 12
#define TLS_WRITER _ZN4hush8internal10tls_writerE

// rax = the cycle counter (rdx clobbered).
.macro READ_TSC
        rdtsc
        shlq    $32, %rdx
        orq     %rdx, %rax
.endm

// Opens a compact event on this thread's writer (r11 = its TLS offset afterwards): \id32 = the
// id from the state word at *\state (\id8: its low byte), nesting 0 -> 1, rax = ts (read inside
// the guard), rdx = the event's end (its start is rdx - EVENT_SIZE), the header written. Jumps
// to \off (event disabled: nothing to write), \slow (nesting not raised) or \abort (nesting
// is 1).
.macro OPEN_EVENT state, id, id32, id8, off, slow, abort
        movq    \state(%rip), \id
        movl    (\id), \id32                    // state: 0 off, else id + 1 (relaxed, as emit.h)
        subl    $1, \id32
        jb      \off
        cmpl    $254, \id32
        ja      \slow                           // an id the compact header cannot hold
        movq    TLS_WRITER@gottpoff(%rip), %r11
        cmpl    $0, %fs:TW_NESTING(%r11)
        jne     \slow
        movl    $1, %fs:TW_NESTING(%r11)        // guard before pos is read (emit.h)
        READ_TSC
        movq    %fs:TW_POS(%r11), %rdx
        addq    $EVENT_SIZE, %rdx
        cmpq    %fs:TW_END(%r11), %rdx          // end is nullptr when the slow path must run
        ja      \abort
        // The packet is open, so TW_COMMIT is valid: ts - the last committed event's timestamp
        // (the commit word's), as -(last - ts) with rdx the only free register.
        movq    %fs:TW_COMMIT(%r11), %rdx
        movq    CW_TIMESTAMP(%rdx), %rdx
        subq    %rax, %rdx
        negq    %rdx
        cmpq    $0xffffff, %rdx
        ja      \abort
        movq    %fs:TW_POS(%r11), %rdx
        addq    $EVENT_SIZE, %rdx
        // The compact header, (ts << 8 | id) little-endian: the id byte, then the low 24 bits of
        // ts (the 4-byte store's last byte is overwritten by the address the caller stores next).
        movb    \id8, -EVENT_SIZE(%rdx)
        movl    %eax, -EVENT_SIZE+1(%rdx)
.endm

// Commits the event of OPEN_EVENT (its address already stored) and lowers nesting: the stores
// of thread_writer.h's CommitEvent, in its order. \t is scratch; rdx is clobbered.
.macro COMMIT_EVENT t
        movq    %rdx, %fs:TW_POS(%r11)
        movq    %fs:TW_COMMIT(%r11), \t
        movq    %rax, CW_TIMESTAMP(\t)
        // One event of EVENT_SIZE bytes more than the word this thread published last.
        movabsq $(1 << 32) + EVENT_SIZE, %rdx
        addq    CW_OFFSET(\t), %rdx
        // Publish (release: x86 keeps stores in order); pairs with Ring::WriteNew's acquire.
        movq    %rdx, CW_OFFSET(\t)
        movl    $0, %fs:TW_NESTING(%r11)
.endm

// A return's slow path, at rsp = slot + 8 (16-byte aligned) with every register as the body
// left it: saves the return registers (rax rdx xmm0 xmm1), calls \handler(slot + 8), which
// returns where to go, and goes there with them restored.
.macro EXIT_THROUGH handler
        subq    $64, %rsp
        movups  %xmm0, 0(%rsp)
        movups  %xmm1, 16(%rsp)
        movq    %rax, 32(%rsp)
        movq    %rdx, 40(%rsp)
        leaq    64(%rsp), %rdi
        call    \handler
        movq    %rax, %r11
        movups  0(%rsp), %xmm0
        movups  16(%rsp), %xmm1
        movq    32(%rsp), %rax
        movq    40(%rsp), %rdx
        addq    $64, %rsp
        pushq   %r11
        ret
.endm

// The entry trampoline \name (see above); its last instruction, the call of the body, must be
// followed directly by the return thunk its calls return to. \sfx makes its labels its own.
.macro FTRACE_ENTRY name, sfx
        .globl  \name
        .hidden \name
        .type   \name, @function
        .p2align 4
\name:
        .cfi_startproc
        pushq   %r11                            // the body: the layout of the file comment
        .cfi_adjust_cfa_offset 8
        subq    $24, %rsp
        .cfi_adjust_cfa_offset 24
        movq    %rax, 0(%rsp)
        movq    %rcx, 8(%rsp)
        movq    %rdx, 16(%rsp)
        // 24(%rsp): body, 32(%rsp): slot
        movq    hush_ft_shadow@gottpoff(%rip), %rcx
        movq    %fs:(%rcx), %rcx                // Shadow*: nullptr, 1 (thread exited) or live
        cmpq    $1, %rcx
        jbe     .Lentry_slow\sfx
        movl    SH_TOP(%rcx), %eax
        cmpl    hush_ft_settings+ST_MAX_DEPTH(%rip), %eax
        jae     .Lentry_slow\sfx                    // --depth reached or stack full: C++ counts it
        cmpq    $0, hush_ft_settings+ST_MIN_TICKS(%rip)
        jne     .Lentry_no_event\sfx
        // func:entry {addr}: TryReserveFast + CommitEvent of thread_writer.h.
        OPEN_EVENT hush_ft_entry_state, %rcx, %ecx, %cl, .Lentry_no_event\sfx, .Lentry_slow\sfx, .Lentry_abort\sfx
        movq    24(%rsp), %rcx
        subq    $5, %rcx                        // the patched entry
        movq    %rcx, -8(%rdx)
        COMMIT_EVENT %rcx
.Lentry_push\sfx:                                   // rax = ts
        movq    hush_ft_shadow@gottpoff(%rip), %rcx
        movq    %fs:(%rcx), %rcx
        movl    SH_TOP(%rcx), %edx              // re-read: a signal handler restores it
        addl    $1, %edx
        movl    %edx, SH_TOP(%rcx)              // reserve first: a handler pushes above it
        leaq    (%rdx,%rdx,4), %rdx
        leaq    SH_FRAMES-40(%rcx,%rdx,8), %rcx // frames[top], 40 bytes each
        movq    %rax, FR_TS(%rcx)
        leaq    32(%rsp), %rdx                  // the slot
        movq    %rdx, FR_SLOT(%rcx)
        movq    (%rdx), %rdx
        movq    %rdx, FR_RET(%rcx)
        movq    24(%rsp), %rdx
        subq    $5, %rdx
        movq    %rdx, FR_SITE(%rcx)
        movl    $0, FR_RESTORED(%rcx)
        movq    0(%rsp), %rax
        movq    8(%rsp), %rcx
        movq    16(%rsp), %rdx
        addq    $24, %rsp
        .cfi_adjust_cfa_offset -24
.Lentry_call\sfx:                                   // rsp+0: the body, rsp+8: the slot
        popq    %r11
        .cfi_adjust_cfa_offset -8
        // The caller's return address is in the frame: its slot takes the call's, so the body
        // sees its stack-passed arguments where they were, and returns where the return-stack
        // buffer predicts. Nothing is pushed between the entry and here, so the caller's call
        // stays the next return-stack entry for the thunk's ret.
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        call    *%r11
        .cfi_endproc
        .size   \name, .-\name
.endm

.macro FTRACE_ENTRY_COLD name, sfx
        // The entry's cold paths (part of the entry; separate so that the call above can
        // end the fast path). CFA as at .Lentry_slow\sfx: the body pushed, 24 bytes saved, the slot.
        .type   \name\()_cold, @function
\name\()_cold:
        .cfi_startproc
        .cfi_def_cfa_offset 40
.Lentry_no_event\sfx:                               // minimum duration, or func:entry off: ts only
        READ_TSC
        jmp     .Lentry_push\sfx
.Lentry_abort\sfx:
        movl    $0, %fs:TW_NESTING(%r11)
.Lentry_slow\sfx:
        // The C++ handler, with every other register that may carry an argument saved below the
        // three saved above: rsi rdi r8 r9, r10 (static chain), xmm0-7. rsp % 16 == 8 here (the
        // body and three registers pushed), 0 at the call: 8 bytes of padding.
        subq    $184, %rsp
        .cfi_adjust_cfa_offset 184
        movq    %rsi, 0(%rsp)
        movq    %rdi, 8(%rsp)
        movq    %r8, 16(%rsp)
        movq    %r9, 24(%rsp)
        movq    %r10, 32(%rsp)
        movups  %xmm0, 40(%rsp)
        movups  %xmm1, 56(%rsp)
        movups  %xmm2, 72(%rsp)
        movups  %xmm3, 88(%rsp)
        movups  %xmm4, 104(%rsp)
        movups  %xmm5, 120(%rsp)
        movups  %xmm6, 136(%rsp)
        movups  %xmm7, 152(%rsp)
        movq    208(%rsp), %rdi                 // body
        leaq    216(%rsp), %rsi                 // slot
        call    hush_ftrace_enter               // 1: frame pushed, 0: untraced
        movl    %eax, %r11d
        movq    0(%rsp), %rsi
        movq    8(%rsp), %rdi
        movq    16(%rsp), %r8
        movq    24(%rsp), %r9
        movq    32(%rsp), %r10
        movups  40(%rsp), %xmm0
        movups  56(%rsp), %xmm1
        movups  72(%rsp), %xmm2
        movups  88(%rsp), %xmm3
        movups  104(%rsp), %xmm4
        movups  120(%rsp), %xmm5
        movups  136(%rsp), %xmm6
        movups  152(%rsp), %xmm7
        movq    184(%rsp), %rax
        movq    192(%rsp), %rcx
        movq    200(%rsp), %rdx
        addq    $208, %rsp
        .cfi_adjust_cfa_offset -208
        testl   %r11d, %r11d
        jnz     .Lentry_call\sfx                    // traced: call the body from the slot
        popq    %r11                            // untraced: rsp = slot, untouched: to the body
        .cfi_adjust_cfa_offset -8
        jmp     *%r11
        .cfi_endproc
        .size   \name\()_cold, .-\name\()_cold
.endm

        .text

        FTRACE_ENTRY hush_ftrace_entry, _p

        // Must follow the call above directly: its return address is the thunk, which
        // RestoreForUnwind / ResumeAfterCatch (shadow.cc) look for in a frame's slot.
        .globl  hush_ftrace_return
        .hidden hush_ftrace_return
        .type   hush_ftrace_return, @function
hush_ftrace_return:
        // The body returned here: rsp = slot + 8. No CFI: the unwinder never walks through here
        // (interpose.cc restores real return addresses before any unwinding starts).
        pushq   %rax
        pushq   %rdx
        movq    hush_ft_shadow@gottpoff(%rip), %r11
        movq    %fs:(%r11), %rsi
        cmpq    $1, %rsi
        jbe     .Lret_slow
        movl    SH_TOP(%rsi), %ecx
        subl    $1, %ecx
        jb      .Lret_slow                      // empty
        leaq    (%rcx,%rcx,4), %r8
        leaq    SH_FRAMES(%rsi,%r8,8), %r8      // the innermost frame
        leaq    8(%rsp), %rdi                   // this return's slot
        cmpq    %rdi, FR_SLOT(%r8)
        jne     .Lret_slow                      // frames left by longjmp or unwinding
        movq    FR_RET(%r8), %r9                // where to go
        movq    hush_ft_settings+ST_MIN_TICKS(%rip), %r10
        testq   %r10, %r10
        jnz     .Lret_min
        // func:exit {addr}, as in the entry.
        OPEN_EVENT hush_ft_exit_state, %rdi, %edi, %dil, .Lret_drop, .Lret_slow, .Lret_abort
        movq    FR_SITE(%r8), %r8
        movq    %r8, -8(%rdx)
        movl    %ecx, SH_TOP(%rsi)              // pop, after the frame was read
        COMMIT_EVENT %rcx
.Lret_done:
        popq    %rdx
        popq    %rax
        pushq   %r9                             // ret, predicted: the caller's own call is the
        ret                                     // return-stack entry on top (nothing else pushed)
.Lret_min:                                      // minimum duration r10: drop a short call here
        READ_TSC
        subq    FR_TS(%r8), %rax
        cmpq    %r10, %rax
        jae     .Lret_slow                      // long enough: C++ writes func:call
.Lret_drop:                                     // nothing to write: pop and return
        movl    %ecx, SH_TOP(%rsi)
        jmp     .Lret_done
.Lret_abort:
        movl    $0, %fs:TW_NESTING(%r11)
.Lret_slow:
        popq    %rdx
        popq    %rax
        EXIT_THROUGH hush_ftrace_exit
        .size   hush_ftrace_return, .-hush_ftrace_return

        FTRACE_ENTRY_COLD hush_ftrace_entry, _p

        // Marked functions (functrace.h, FunctionTrigger): the same entry, a thunk of its own.
        FTRACE_ENTRY hush_ftrace_entry_marked, _m

        // Must follow the marked entry's call directly (as above). A marked call always leaves
        // through the C++ exit, which emits its exit as the other path does, then checks its
        // triggers (shadow.cc, hush_ftrace_exit_marked). rsp = slot + 8 (16-byte aligned).
        .globl  hush_ftrace_return_marked
        .hidden hush_ftrace_return_marked
        .type   hush_ftrace_return_marked, @function
hush_ftrace_return_marked:
        EXIT_THROUGH hush_ftrace_exit_marked
        .size   hush_ftrace_return_marked, .-hush_ftrace_return_marked

        FTRACE_ENTRY_COLD hush_ftrace_entry_marked, _m


        .section .note.GNU-stack, "", @progbits
