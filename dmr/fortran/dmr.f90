! The Fortran module `dmr` over libdmr (dmr.h): `use dmr` in an MPI program that uses `use mpi`.
!
! Communicators are integer handles (as `use mpi` has them), resize handles are integers. Functions
! return the C API's codes (DMR_NO_ACTION, DMR_EXPAND, DMR_SHRINK, or a negative DMR_ERR_*), except
! dmr_joining and dmr_finish, which return logicals. dmr_redistribute moves a 1-D real(8) or integer
! array (blocks in rank order); `unit` elements move together (e.g. one grid column).
!
! Compile this file with the program (the module is then built by the same compiler):
!   gfortran $(dmr-config --fsource) app.f90 -o app $(dmr-config --fflags --flibs)
module dmr
  use, intrinsic :: iso_c_binding, only: c_int, c_double, c_ptr, c_null_ptr, c_loc, c_f_pointer, &
                                         c_associated, c_int32_t
  implicit none
  private

  integer, parameter, public :: DMR_NO_ACTION = 0, DMR_EXPAND = 1, DMR_SHRINK = 2
  integer, parameter, public :: DMR_ERR_ARG = -1, DMR_ERR_INIT = -2, DMR_ERR_HANDLE = -3, &
                                DMR_ERR_RUNTIME = -4

  public :: dmr_init, dmr_finalize, dmr_comm, dmr_size, dmr_joining, dmr_check_status, &
            dmr_icheck_status, dmr_handle_comm, dmr_handle_sizes, dmr_redistribute, dmr_finish, &
            dmr_set_progress, dmr_request_growth

  interface dmr_redistribute
    module procedure redistribute_real8, redistribute_int
  end interface

  interface
    function dmr_init() bind(C, name="dmr_init") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function
    function dmr_finalize() bind(C, name="dmr_finalize") result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function
    function dmr_size() bind(C, name="dmr_size") result(n)
      import :: c_int
      integer(c_int) :: n
    end function
    function dmr_comm() bind(C, name="dmr_comm_f") result(comm)
      import :: c_int
      integer(c_int) :: comm
    end function
    function dmr_handle_comm(h) bind(C, name="dmr_handle_comm_f") result(comm)
      import :: c_int
      integer(c_int), value :: h
      integer(c_int) :: comm
    end function
    function dmr_check_status(min, max, factor, preferred, new_size, h) &
        bind(C, name="dmr_check_status") result(action)
      import :: c_int
      integer(c_int), value :: min, max, factor, preferred
      integer(c_int), intent(out) :: new_size, h
      integer(c_int) :: action
    end function
    function dmr_icheck_status(min, max, factor, preferred, new_size, h) &
        bind(C, name="dmr_icheck_status") result(action)
      import :: c_int
      integer(c_int), value :: min, max, factor, preferred
      integer(c_int), intent(out) :: new_size, h
      integer(c_int) :: action
    end function
    function dmr_handle_sizes(h, old_size, new_size) bind(C, name="dmr_handle_sizes") result(action)
      import :: c_int
      integer(c_int), value :: h
      integer(c_int), intent(out) :: old_size, new_size
      integer(c_int) :: action
    end function
    function dmr_set_progress(fraction) bind(C, name="dmr_set_progress") result(rc)
      import :: c_int, c_double
      real(c_double), value :: fraction
      integer(c_int) :: rc
    end function
    function dmr_request_growth(procs) bind(C, name="dmr_request_growth") result(rc)
      import :: c_int
      integer(c_int), value :: procs
      integer(c_int) :: rc
    end function
    function c_joining(h) bind(C, name="dmr_joining") result(yes)
      import :: c_int
      integer(c_int), intent(out) :: h
      integer(c_int) :: yes
    end function
    function c_finish(h) bind(C, name="dmr_finish") result(rc)
      import :: c_int
      integer(c_int), value :: h
      integer(c_int) :: rc
    end function
    function c_redistribute(h, local, count, unit, out, out_count) &
        bind(C, name="dmr_redistribute_bytes") result(rc)
      import :: c_int, c_ptr
      integer(c_int), value :: h, count, unit
      type(c_ptr), value :: local
      type(c_ptr), intent(out) :: out
      integer(c_int), intent(out) :: out_count
      integer(c_int) :: rc
    end function
    subroutine c_free(p) bind(C, name="dmr_free")
      import :: c_ptr
      type(c_ptr), value :: p
    end subroutine
  end interface

contains

  ! .true. on a rank started by an expansion (h: that resize's handle)
  logical function dmr_joining(h)
    integer, intent(out) :: h
    integer(c_int) :: ch
    dmr_joining = c_joining(ch) == 1
    h = ch
  end function

  ! completes the resize: .true. where the rank continues; .false. on ranks a shrink removes (they
  ! call dmr_finalize and MPI_Finalize and stop). A negative code is reported as .false. with ierr.
  logical function dmr_finish(h, ierr)
    integer, intent(in) :: h
    integer, intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_finish(h)
    if (present(ierr)) ierr = min(rc, 0)
    dmr_finish = rc == 1
  end function

  ! the bytes of `local` (count elements of `unit` x `bytes` bytes) through dmr_redistribute_bytes
  integer function move(h, local, n, unit, bytes, out, out_count) result(rc)
    integer, intent(in) :: h, n, unit, bytes
    type(c_ptr), intent(in) :: local
    type(c_ptr), intent(out) :: out
    integer, intent(out) :: out_count
    integer(c_int) :: count
    out_count = 0
    out = c_null_ptr
    if (unit < 1 .or. mod(n, max(unit, 1)) /= 0) then
      rc = DMR_ERR_ARG
      return
    end if
    rc = c_redistribute(h, local, n / unit, unit * bytes, out, count)
    out_count = count * unit
  end function

  integer function redistribute_real8(h, local, out, unit) result(rc)
    integer, intent(in) :: h
    real(c_double), intent(in), target, contiguous :: local(:)
    real(c_double), allocatable, intent(inout) :: out(:)
    integer, intent(in), optional :: unit
    real(c_double), pointer :: got(:)
    type(c_ptr) :: p, q
    integer :: n, u
    u = 1
    if (present(unit)) u = unit
    p = c_null_ptr
    if (size(local) > 0) p = c_loc(local)
    rc = move(h, p, size(local), u, 8, q, n)
    if (rc /= 0) return
    if (allocated(out)) deallocate(out)
    allocate(out(n))
    if (n > 0) then
      call c_f_pointer(q, got, [n])
      out = got
    end if
    if (c_associated(q)) call c_free(q)
  end function

  integer function redistribute_int(h, local, out, unit) result(rc)
    integer, intent(in) :: h
    integer(c_int32_t), intent(in), target, contiguous :: local(:)
    integer(c_int32_t), allocatable, intent(inout) :: out(:)
    integer, intent(in), optional :: unit
    integer(c_int32_t), pointer :: got(:)
    type(c_ptr) :: p, q
    integer :: n, u
    u = 1
    if (present(unit)) u = unit
    p = c_null_ptr
    if (size(local) > 0) p = c_loc(local)
    rc = move(h, p, size(local), u, 4, q, n)
    if (rc /= 0) return
    if (allocated(out)) deallocate(out)
    allocate(out(n))
    if (n > 0) then
      call c_f_pointer(q, got, [n])
      out = got
    end if
    if (c_associated(q)) call c_free(q)
  end function
end module dmr
