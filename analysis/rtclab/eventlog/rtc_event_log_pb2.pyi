from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EventStream(_message.Message):
    __slots__ = ("stream",)
    STREAM_FIELD_NUMBER: _ClassVar[int]
    stream: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, stream: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("timestamp_us", "type", "rtp_packet", "rtcp_packet", "loss_based_bwe_update", "delay_based_bwe_update", "video_receiver_config", "video_sender_config", "audio_receiver_config", "audio_sender_config", "probe_cluster", "probe_result", "alr_state")
    class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN_EVENT: _ClassVar[Event.EventType]
        LOG_START: _ClassVar[Event.EventType]
        LOG_END: _ClassVar[Event.EventType]
        RTP_EVENT: _ClassVar[Event.EventType]
        RTCP_EVENT: _ClassVar[Event.EventType]
        AUDIO_PLAYOUT_EVENT: _ClassVar[Event.EventType]
        LOSS_BASED_BWE_UPDATE: _ClassVar[Event.EventType]
        DELAY_BASED_BWE_UPDATE: _ClassVar[Event.EventType]
        VIDEO_RECEIVER_CONFIG_EVENT: _ClassVar[Event.EventType]
        VIDEO_SENDER_CONFIG_EVENT: _ClassVar[Event.EventType]
        AUDIO_RECEIVER_CONFIG_EVENT: _ClassVar[Event.EventType]
        AUDIO_SENDER_CONFIG_EVENT: _ClassVar[Event.EventType]
        AUDIO_NETWORK_ADAPTATION_EVENT: _ClassVar[Event.EventType]
        BWE_PROBE_CLUSTER_CREATED_EVENT: _ClassVar[Event.EventType]
        BWE_PROBE_RESULT_EVENT: _ClassVar[Event.EventType]
        ALR_STATE_EVENT: _ClassVar[Event.EventType]
        ICE_CANDIDATE_PAIR_CONFIG: _ClassVar[Event.EventType]
        ICE_CANDIDATE_PAIR_EVENT: _ClassVar[Event.EventType]
        REMOTE_ESTIMATE: _ClassVar[Event.EventType]
    UNKNOWN_EVENT: Event.EventType
    LOG_START: Event.EventType
    LOG_END: Event.EventType
    RTP_EVENT: Event.EventType
    RTCP_EVENT: Event.EventType
    AUDIO_PLAYOUT_EVENT: Event.EventType
    LOSS_BASED_BWE_UPDATE: Event.EventType
    DELAY_BASED_BWE_UPDATE: Event.EventType
    VIDEO_RECEIVER_CONFIG_EVENT: Event.EventType
    VIDEO_SENDER_CONFIG_EVENT: Event.EventType
    AUDIO_RECEIVER_CONFIG_EVENT: Event.EventType
    AUDIO_SENDER_CONFIG_EVENT: Event.EventType
    AUDIO_NETWORK_ADAPTATION_EVENT: Event.EventType
    BWE_PROBE_CLUSTER_CREATED_EVENT: Event.EventType
    BWE_PROBE_RESULT_EVENT: Event.EventType
    ALR_STATE_EVENT: Event.EventType
    ICE_CANDIDATE_PAIR_CONFIG: Event.EventType
    ICE_CANDIDATE_PAIR_EVENT: Event.EventType
    REMOTE_ESTIMATE: Event.EventType
    TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    RTP_PACKET_FIELD_NUMBER: _ClassVar[int]
    RTCP_PACKET_FIELD_NUMBER: _ClassVar[int]
    LOSS_BASED_BWE_UPDATE_FIELD_NUMBER: _ClassVar[int]
    DELAY_BASED_BWE_UPDATE_FIELD_NUMBER: _ClassVar[int]
    VIDEO_RECEIVER_CONFIG_FIELD_NUMBER: _ClassVar[int]
    VIDEO_SENDER_CONFIG_FIELD_NUMBER: _ClassVar[int]
    AUDIO_RECEIVER_CONFIG_FIELD_NUMBER: _ClassVar[int]
    AUDIO_SENDER_CONFIG_FIELD_NUMBER: _ClassVar[int]
    PROBE_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    PROBE_RESULT_FIELD_NUMBER: _ClassVar[int]
    ALR_STATE_FIELD_NUMBER: _ClassVar[int]
    timestamp_us: int
    type: Event.EventType
    rtp_packet: RtpPacket
    rtcp_packet: RtcpPacket
    loss_based_bwe_update: LossBasedBweUpdate
    delay_based_bwe_update: DelayBasedBweUpdate
    video_receiver_config: VideoReceiveConfig
    video_sender_config: VideoSendConfig
    audio_receiver_config: AudioReceiveConfig
    audio_sender_config: AudioSendConfig
    probe_cluster: BweProbeCluster
    probe_result: BweProbeResult
    alr_state: AlrState
    def __init__(self, timestamp_us: _Optional[int] = ..., type: _Optional[_Union[Event.EventType, str]] = ..., rtp_packet: _Optional[_Union[RtpPacket, _Mapping]] = ..., rtcp_packet: _Optional[_Union[RtcpPacket, _Mapping]] = ..., loss_based_bwe_update: _Optional[_Union[LossBasedBweUpdate, _Mapping]] = ..., delay_based_bwe_update: _Optional[_Union[DelayBasedBweUpdate, _Mapping]] = ..., video_receiver_config: _Optional[_Union[VideoReceiveConfig, _Mapping]] = ..., video_sender_config: _Optional[_Union[VideoSendConfig, _Mapping]] = ..., audio_receiver_config: _Optional[_Union[AudioReceiveConfig, _Mapping]] = ..., audio_sender_config: _Optional[_Union[AudioSendConfig, _Mapping]] = ..., probe_cluster: _Optional[_Union[BweProbeCluster, _Mapping]] = ..., probe_result: _Optional[_Union[BweProbeResult, _Mapping]] = ..., alr_state: _Optional[_Union[AlrState, _Mapping]] = ...) -> None: ...

class RtpPacket(_message.Message):
    __slots__ = ("incoming", "packet_length", "header", "probe_cluster_id")
    INCOMING_FIELD_NUMBER: _ClassVar[int]
    PACKET_LENGTH_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    PROBE_CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    incoming: bool
    packet_length: int
    header: bytes
    probe_cluster_id: int
    def __init__(self, incoming: _Optional[bool] = ..., packet_length: _Optional[int] = ..., header: _Optional[bytes] = ..., probe_cluster_id: _Optional[int] = ...) -> None: ...

class RtcpPacket(_message.Message):
    __slots__ = ("incoming", "packet_data")
    INCOMING_FIELD_NUMBER: _ClassVar[int]
    PACKET_DATA_FIELD_NUMBER: _ClassVar[int]
    incoming: bool
    packet_data: bytes
    def __init__(self, incoming: _Optional[bool] = ..., packet_data: _Optional[bytes] = ...) -> None: ...

class LossBasedBweUpdate(_message.Message):
    __slots__ = ("bitrate_bps", "fraction_loss", "total_packets")
    BITRATE_BPS_FIELD_NUMBER: _ClassVar[int]
    FRACTION_LOSS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PACKETS_FIELD_NUMBER: _ClassVar[int]
    bitrate_bps: int
    fraction_loss: int
    total_packets: int
    def __init__(self, bitrate_bps: _Optional[int] = ..., fraction_loss: _Optional[int] = ..., total_packets: _Optional[int] = ...) -> None: ...

class DelayBasedBweUpdate(_message.Message):
    __slots__ = ("bitrate_bps", "detector_state")
    class DetectorState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        BWE_NORMAL: _ClassVar[DelayBasedBweUpdate.DetectorState]
        BWE_UNDERUSING: _ClassVar[DelayBasedBweUpdate.DetectorState]
        BWE_OVERUSING: _ClassVar[DelayBasedBweUpdate.DetectorState]
    BWE_NORMAL: DelayBasedBweUpdate.DetectorState
    BWE_UNDERUSING: DelayBasedBweUpdate.DetectorState
    BWE_OVERUSING: DelayBasedBweUpdate.DetectorState
    BITRATE_BPS_FIELD_NUMBER: _ClassVar[int]
    DETECTOR_STATE_FIELD_NUMBER: _ClassVar[int]
    bitrate_bps: int
    detector_state: DelayBasedBweUpdate.DetectorState
    def __init__(self, bitrate_bps: _Optional[int] = ..., detector_state: _Optional[_Union[DelayBasedBweUpdate.DetectorState, str]] = ...) -> None: ...

class RtpHeaderExtension(_message.Message):
    __slots__ = ("name", "id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    id: int
    def __init__(self, name: _Optional[str] = ..., id: _Optional[int] = ...) -> None: ...

class VideoReceiveConfig(_message.Message):
    __slots__ = ("remote_ssrc", "local_ssrc", "header_extensions")
    REMOTE_SSRC_FIELD_NUMBER: _ClassVar[int]
    LOCAL_SSRC_FIELD_NUMBER: _ClassVar[int]
    HEADER_EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    remote_ssrc: int
    local_ssrc: int
    header_extensions: _containers.RepeatedCompositeFieldContainer[RtpHeaderExtension]
    def __init__(self, remote_ssrc: _Optional[int] = ..., local_ssrc: _Optional[int] = ..., header_extensions: _Optional[_Iterable[_Union[RtpHeaderExtension, _Mapping]]] = ...) -> None: ...

class VideoSendConfig(_message.Message):
    __slots__ = ("ssrcs", "header_extensions", "rtx_ssrcs")
    SSRCS_FIELD_NUMBER: _ClassVar[int]
    HEADER_EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    RTX_SSRCS_FIELD_NUMBER: _ClassVar[int]
    ssrcs: _containers.RepeatedScalarFieldContainer[int]
    header_extensions: _containers.RepeatedCompositeFieldContainer[RtpHeaderExtension]
    rtx_ssrcs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ssrcs: _Optional[_Iterable[int]] = ..., header_extensions: _Optional[_Iterable[_Union[RtpHeaderExtension, _Mapping]]] = ..., rtx_ssrcs: _Optional[_Iterable[int]] = ...) -> None: ...

class AudioReceiveConfig(_message.Message):
    __slots__ = ("remote_ssrc", "local_ssrc", "header_extensions")
    REMOTE_SSRC_FIELD_NUMBER: _ClassVar[int]
    LOCAL_SSRC_FIELD_NUMBER: _ClassVar[int]
    HEADER_EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    remote_ssrc: int
    local_ssrc: int
    header_extensions: _containers.RepeatedCompositeFieldContainer[RtpHeaderExtension]
    def __init__(self, remote_ssrc: _Optional[int] = ..., local_ssrc: _Optional[int] = ..., header_extensions: _Optional[_Iterable[_Union[RtpHeaderExtension, _Mapping]]] = ...) -> None: ...

class AudioSendConfig(_message.Message):
    __slots__ = ("ssrc", "header_extensions")
    SSRC_FIELD_NUMBER: _ClassVar[int]
    HEADER_EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    ssrc: int
    header_extensions: _containers.RepeatedCompositeFieldContainer[RtpHeaderExtension]
    def __init__(self, ssrc: _Optional[int] = ..., header_extensions: _Optional[_Iterable[_Union[RtpHeaderExtension, _Mapping]]] = ...) -> None: ...

class BweProbeCluster(_message.Message):
    __slots__ = ("id", "bitrate_bps", "min_packets", "min_bytes")
    ID_FIELD_NUMBER: _ClassVar[int]
    BITRATE_BPS_FIELD_NUMBER: _ClassVar[int]
    MIN_PACKETS_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    id: int
    bitrate_bps: int
    min_packets: int
    min_bytes: int
    def __init__(self, id: _Optional[int] = ..., bitrate_bps: _Optional[int] = ..., min_packets: _Optional[int] = ..., min_bytes: _Optional[int] = ...) -> None: ...

class BweProbeResult(_message.Message):
    __slots__ = ("id", "result", "bitrate_bps")
    class ResultType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SUCCESS: _ClassVar[BweProbeResult.ResultType]
        INVALID_SEND_RECEIVE_INTERVAL: _ClassVar[BweProbeResult.ResultType]
        INVALID_SEND_RECEIVE_RATIO: _ClassVar[BweProbeResult.ResultType]
        TIMEOUT: _ClassVar[BweProbeResult.ResultType]
    SUCCESS: BweProbeResult.ResultType
    INVALID_SEND_RECEIVE_INTERVAL: BweProbeResult.ResultType
    INVALID_SEND_RECEIVE_RATIO: BweProbeResult.ResultType
    TIMEOUT: BweProbeResult.ResultType
    ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    BITRATE_BPS_FIELD_NUMBER: _ClassVar[int]
    id: int
    result: BweProbeResult.ResultType
    bitrate_bps: int
    def __init__(self, id: _Optional[int] = ..., result: _Optional[_Union[BweProbeResult.ResultType, str]] = ..., bitrate_bps: _Optional[int] = ...) -> None: ...

class AlrState(_message.Message):
    __slots__ = ("in_alr",)
    IN_ALR_FIELD_NUMBER: _ClassVar[int]
    in_alr: bool
    def __init__(self, in_alr: _Optional[bool] = ...) -> None: ...
