! Jacobi in Fortran: apps/jacobi.py's heat problem through the `dmr` module (libdmr). The N x N grid
! is held as columns of N points (grid rows in C and Python), in blocks over the ranks; each step
! does --sweeps sweeps after a DMR reconfiguring point; the columns are redistributed at every
! resize; at the end rank 0 repeats every sweep alone and checks the grid is the same, bit for bit.
!
!   gfortran $(dmr-config --fsource) jacobi.f90 -o jacobi_f $(dmr-config --fflags --flibs)
!   dmr-run --ppn 2 -- ./jacobi_f --n 256 --steps 20 --sweeps 50 --max 8
!
! Options as apps/c/jacobi.c's. Prints one JACOBI_RESULT {json} line; exit code 0 if it checks.
program jacobi
  use mpi
  use dmr
  use, intrinsic :: iso_c_binding, only: c_int
  implicit none
  interface
    function usleep(us) bind(C, name="usleep") result(rc)
      import :: c_int
      integer(c_int), value :: us
      integer(c_int) :: rc
    end function
  end interface
  integer :: n = 256, steps = 10, sweeps = 50, min_procs = 1, max_procs = 4, factor = 2, preferred = 0
  logical :: asynchronous = .false.
  double precision :: model_seconds = 0
  integer :: plan_step(64), plan_ranks(64), plans = 0
  double precision, allocatable :: u(:), nxt(:), grid(:), ref(:), tmp(:)
  double precision :: t_start, t0, diff
  double precision, allocatable :: above(:), below(:)
  integer :: ierr, rank, nranks, rows, step, h, action, new_size, lo, w, up, down, r, lo_p, hi_p, want, f
  integer :: comm
  integer, allocatable :: counts(:), displs(:)
  character(len=4096) :: history = ''
  logical :: skip_check, ok

  call MPI_Init(ierr)
  call parse()
  if (dmr_init() /= 0) call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  allocate(above(n), below(n))
  t_start = MPI_Wtime()
  step = 0
  skip_check = .false.
  if (dmr_joining(h)) then  ! started by an expansion: take my columns, go on at the parents' step
    allocate(u(0))
    if (.not. carry(h, MPI_Wtime())) goto 100
    skip_check = .true.
  else
    call MPI_Comm_rank(dmr_comm(), rank, ierr)
    call block(n, dmr_size(), rank, lo, rows)
    allocate(u(n * rows))
    call initial(u, n, lo, rows)
  end if

  do while (step < steps)
    if (.not. skip_check) then
      f = factor
      want = planned(step, dmr_size(), f)
      lo_p = min_procs; hi_p = max_procs
      if (want > 0) then
        lo_p = want; hi_p = want
      end if
      ierr = dmr_set_progress(dble(step) / steps)
      t0 = MPI_Wtime()
      if (asynchronous) then
        action = dmr_icheck_status(lo_p, hi_p, f, merge(0, preferred, want > 0), new_size, h)
      else
        action = dmr_check_status(lo_p, hi_p, f, merge(0, preferred, want > 0), new_size, h)
      end if
      if (action < 0) call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
      if (action /= DMR_NO_ACTION) then
        if (.not. carry(h, t0)) goto 100
      end if
    end if
    skip_check = .false.
    comm = dmr_comm()
    call MPI_Comm_rank(comm, rank, ierr)
    call MPI_Comm_size(comm, nranks, ierr)
    rows = size_rows()
    lo = 0
    call MPI_Exscan(rows, lo, 1, MPI_INTEGER, MPI_SUM, comm, ierr)
    if (rank == 0) lo = 0
    up = MPI_PROC_NULL; down = MPI_PROC_NULL
    if (rank > 0) up = rank - 1
    if (rank + 1 < nranks) down = rank + 1
    allocate(nxt(n * rows))
    do w = 1, sweeps
      ! my first column up while the one below me comes in, then the other way round
      call MPI_Sendrecv(u(1:n), n, MPI_DOUBLE_PRECISION, up, 0, below, n, MPI_DOUBLE_PRECISION, down, &
                        0, comm, MPI_STATUS_IGNORE, ierr)
      call MPI_Sendrecv(u(n * (rows - 1) + 1:), n, MPI_DOUBLE_PRECISION, down, 1, above, n, &
                        MPI_DOUBLE_PRECISION, up, 1, comm, MPI_STATUS_IGNORE, ierr)
      call sweep(u, nxt, rows, lo, n)
      u = nxt
    end do
    deallocate(nxt)
    if (model_seconds > 0) ierr = usleep(int(model_seconds / nranks * 1e6, c_int))
    step = step + 1
  end do

  ! gather the grid on rank 0 and check it against one rank doing every sweep alone
  comm = dmr_comm()
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Comm_size(comm, nranks, ierr)
  allocate(counts(nranks), displs(nranks))
  call MPI_Gather(size_rows() * n, 1, MPI_INTEGER, counts, 1, MPI_INTEGER, 0, comm, ierr)
  if (rank == 0) then
    displs(1) = 0
    do r = 2, nranks
      displs(r) = displs(r - 1) + counts(r - 1)
    end do
    allocate(grid(n * n))
  else
    allocate(grid(1))
  end if
  call MPI_Gatherv(u, size(u), MPI_DOUBLE_PRECISION, grid, counts, displs, MPI_DOUBLE_PRECISION, 0, &
                   comm, ierr)
  ok = .true.
  if (rank == 0) then
    allocate(ref(n * n), tmp(n * n))
    call initial(ref, n, 0, n)
    do w = 1, steps * sweeps
      call sweep(ref, tmp, n, 0, n)
      ref = tmp
    end do
    diff = maxval(abs(grid - ref))
    ok = diff <= 1d-12
    write (*, '(a,a,a,es10.3,a,i0,a,i0,a,a,a,es10.3,a)') 'JACOBI_RESULT {"ok": ', &
      trim(merge('true ', 'false', ok)), ', "max_diff": ', diff, ', "final_size": ', nranks, &
      ', "steps": ', steps, ', "resizes": [', trim(history), '], "seconds": ', MPI_Wtime() - t_start, &
      ', "language": "fortran"}'
    flush(6)
  end if
  ierr = dmr_finalize()
  call MPI_Finalize(ierr)
  if (.not. ok) stop 1
  stop

100 continue  ! a shrink removed this rank: its acknowledgement is sent; finalize and end with 0
  ierr = dmr_finalize()
  call MPI_Finalize(ierr)

contains

  integer function size_rows()
    size_rows = size(u) / n
  end function

  ! carry the state over a resize: the same calls in the same order on old and new ranks
  logical function carry(h, t0)
    integer, intent(in) :: h
    double precision, intent(in) :: t0
    double precision, allocatable :: moved(:)
    integer :: hc, hrank, old_size, new_size, kind, e
    hc = dmr_handle_comm(h)
    call MPI_Bcast(step, 1, MPI_INTEGER, 0, hc, e)
    if (dmr_redistribute(h, u, moved, unit=n) /= 0) call MPI_Abort(MPI_COMM_WORLD, 3, e)
    call move_alloc(moved, u)
    kind = dmr_handle_sizes(h, old_size, new_size)
    call MPI_Comm_rank(hc, hrank, e)
    if (hrank == 0) then
      if (len_trim(history) > 0) history = trim(history) // ','
      write (history(len_trim(history) + 1:), '(a,i0,a,a,a,i0,a,i0,a,es12.5,a)') '[', step, ',"', &
        trim(merge('expand', 'shrink', kind == DMR_EXPAND)), '",', old_size, ',', new_size, ',', &
        MPI_Wtime() - t0, ']'
    end if
    carry = dmr_finish(h)
  end function

  subroutine block(n, parts, rank, lo, rows)
    integer, intent(in) :: n, parts, rank
    integer, intent(out) :: lo, rows
    lo = rank * (n / parts) + min(rank, mod(n, parts))
    rows = n / parts
    if (rank < mod(n, parts)) rows = rows + 1
  end subroutine

  subroutine initial(u, n, lo, rows)
    double precision, intent(out) :: u(:)
    integer, intent(in) :: n, lo, rows
    u = 0
    if (lo == 0 .and. rows > 0) u(1:n) = 1  ! the hot edge
  end subroutine

  ! one sweep of columns [lo, lo+rows) given the columns next to them (above, below: the halos)
  subroutine sweep(u, nxt, rows, lo, n)
    double precision, intent(in) :: u(:)
    double precision, intent(out) :: nxt(:)
    integer, intent(in) :: rows, lo, n
    integer :: i, j, g, c
    double precision :: a, b
    nxt = u
    do i = 1, rows
      g = lo + i - 1
      if (g == 0 .or. g == n - 1) cycle
      c = (i - 1) * n
      do j = 2, n - 1
        if (i > 1) then
          a = u(c - n + j)
        else
          a = above(j)
        end if
        if (i < rows) then
          b = u(c + n + j)
        else
          b = below(j)
        end if
        nxt(c + j) = 0.25d0 * (a + b + u(c + j - 1) + u(c + j + 1))
      end do
    end do
  end subroutine

  integer function planned(step, current, f)
    integer, intent(in) :: step, current
    integer, intent(inout) :: f
    integer :: i, best, big, small
    planned = 0
    best = -1
    do i = 1, plans
      if (plan_step(i) <= step .and. plan_step(i) >= best) then
        best = plan_step(i)
        planned = plan_ranks(i)
      end if
    end do
    if (planned == 0) return
    big = max(planned, current); small = min(planned, current)
    f = 2
    if (mod(big, small) == 0 .and. big > small) f = big / small
  end function

  subroutine parse()
    character(len=256) :: a, v
    integer :: i, k, e, colon
    i = 1
    do while (i <= command_argument_count())
      call get_command_argument(i, a)
      if (a == '--async') then
        asynchronous = .true.
        i = i + 1
        cycle
      end if
      if (i + 1 > command_argument_count()) call usage('an option needs a value')
      call get_command_argument(i + 1, v)
      i = i + 2
      select case (a)
      case ('--n'); read (v, *, iostat=e) n
      case ('--steps'); read (v, *, iostat=e) steps
      case ('--sweeps'); read (v, *, iostat=e) sweeps
      case ('--min'); read (v, *, iostat=e) min_procs
      case ('--max'); read (v, *, iostat=e) max_procs
      case ('--factor'); read (v, *, iostat=e) factor
      case ('--preferred'); read (v, *, iostat=e) preferred
      case ('--model-seconds'); read (v, *, iostat=e) model_seconds
      case ('--plan')
        e = 0
        do while (len_trim(v) > 0 .and. e == 0)
          k = index(v, ',')
          if (k == 0) k = len_trim(v) + 1
          colon = index(v(1:k - 1), ':')
          if (colon == 0 .or. plans == 64) call usage('--plan must be STEP:RANKS,...')
          plans = plans + 1
          read (v(1:colon - 1), *, iostat=e) plan_step(plans)
          if (e == 0) read (v(colon + 1:k - 1), *, iostat=e) plan_ranks(plans)
          v = v(k + 1:)
        end do
      case default
        call usage('unknown option ' // trim(a))
      end select
      if (e /= 0) call usage(trim(a) // ' needs a number, got ''' // trim(v) // '''')
    end do
    if (steps < 1 .or. sweeps < 1 .or. min_procs < 1 .or. min_procs > max_procs .or. factor < 2 .or. &
        n < max(3, max_procs)) &
      call usage('need --steps, --sweeps, --min >= 1, --min <= --max, --factor >= 2, --n >= max(3, --max)')
  end subroutine

  subroutine usage(why)
    character(len=*), intent(in) :: why
    write (0, '(a)') 'usage: jacobi_f [--n N] [--steps S] [--sweeps W] [--min A] [--max B] [--factor F] ' // &
      '[--preferred P] [--async] [--plan STEP:RANKS,...] [--model-seconds X]'
    write (0, '(a)') 'jacobi_f: error: ' // why
    call exit(2)
  end subroutine
end program jacobi
